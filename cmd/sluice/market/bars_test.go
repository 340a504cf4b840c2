package market_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/market"
)

func TestEventTimesLagIsBoundedDeterministicAndLateAtTheRateAsked(t *testing.T) {
	times := market.EventTimes{Seed: 7, Disorder: 100 * time.Millisecond, Late: 0.01, LateBy: 5 * time.Second}
	const n = 200_000
	late, spread := 0, map[time.Duration]bool{}
	for id := range uint64(n) {
		lag := times.Lag(id)
		if lag != times.Lag(id) {
			t.Fatalf("id %d: lag %v, then %v", id, lag, times.Lag(id))
		}
		onTime := lag
		if times.IsLate(id) {
			late++
			onTime -= times.LateBy
		}
		if onTime < 0 || onTime > times.Disorder {
			t.Fatalf("id %d: lag %v (late %v), want within [0, %v] beyond LateBy", id, lag, times.IsLate(id), times.Disorder)
		}
		spread[onTime/(10*time.Millisecond)] = true
		if got := times.At(id, 1e18); got != 1e18-int64(lag) {
			t.Fatalf("At(%d, 1e18) = %d, want %d", id, got, 1e18-int64(lag))
		}
	}
	if late < n/100*8/10 || late > n/100*12/10 {
		t.Errorf("%d late of %d, want about 1%%", late, n)
	}
	if len(spread) < 10 {
		t.Errorf("lags fall in %d of the 10 ms buckets up to 100 ms, want all", len(spread))
	}
	other := times
	other.Seed = 8
	same := 0
	for id := range uint64(1000) {
		if other.Lag(id) == times.Lag(id) {
			same++
		}
	}
	if same > 10 {
		t.Errorf("seeds 7 and 8 give %d of 1000 lags equal", same)
	}
	if (market.EventTimes{}).Lag(3) != 0 {
		t.Errorf("the zero EventTimes lags by %v, want 0", market.EventTimes{}.Lag(3))
	}
}

func tick(id uint64, sym string, price4, size, ts int64) market.Tick {
	return market.Tick{ID: id, Symbol: sym, Price4: price4, Size: size, TS: ts, Notional: price4 * size}
}

func TestBarOpensAndClosesByEventTimeThenIDWhateverTheArrivalOrder(t *testing.T) {
	const s = 1_700_000_000 * int64(time.Second)
	ticks := []market.Tick{
		tick(5, "AAPL", 100, 1, s+500),
		tick(3, "AAPL", 300, 2, s+100), // the open: earliest
		tick(4, "AAPL", 50, 3, s+900),  // the close: ties with 9 on time, lower id
		tick(9, "AAPL", 70, 4, s+900),  // the close: latest, higher id
		tick(1, "AAPL", 400, 5, s+100), // earliest too, but lower id: the open
	}
	want := market.Bar{Symbol: "AAPL", Start: s, Open: 400, High: 400, Low: 50, Close: 70,
		Volume: 15, Notional: 100 + 600 + 150 + 280 + 2000, Trades: 5}
	for range 50 {
		rand.Shuffle(len(ticks), func(i, j int) { ticks[i], ticks[j] = ticks[j], ticks[i] })
		var b market.Bar
		for _, tk := range ticks {
			b.Add(tk)
		}
		if !b.Same(want) {
			t.Fatalf("order %v: got %+v, want %+v", ticks, b, want)
		}
	}
	if got, want := want.VWAP(), float64(3130)/15; got != want {
		t.Errorf("VWAP %v, want %v", got, want)
	}
}

func TestWindowStartFloorsToTheSecondBeforeAndAfterTheEpoch(t *testing.T) {
	for _, c := range []struct{ ts, want int64 }{
		{0, 0}, {1, 0}, {999_999_999, 0}, {1e9, 1e9}, {-1, -1e9}, {-1e9, -1e9}, {-1e9 - 1, -2e9},
	} {
		if got := market.WindowStart(c.ts); got != c.want {
			t.Errorf("WindowStart(%d) = %d, want %d", c.ts, got, c.want)
		}
	}
}

func TestReferenceBarsCountsATickLateOnlyOnceItsWindowIsBeyondTheAllowedLateness(t *testing.T) {
	const s = 1_000 * int64(time.Second)
	l := market.Lateness{OutOfOrderness: 100 * time.Millisecond, AllowedLateness: 200 * time.Millisecond}
	ms := int64(time.Millisecond)
	ticks := []market.Tick{
		tick(1, "A", 10, 1, s+10*ms),
		tick(2, "A", 10, 1, s+1400*ms), // watermark s+1300ms: window [s, s+1s) ended 300 ms ago
		tick(3, "A", 20, 1, s+999*ms),  // late: its window ended ≥ 200 ms before the watermark
		tick(4, "B", 30, 1, s+1250*ms),
		tick(5, "A", 40, 1, s+1200*ms), // on time, in the window [s+1s, s+2s)
	}
	bars, late := market.ReferenceBars(ticks, market.OnePartition, l)
	if len(late) != 1 || late[0].ID != 3 {
		t.Errorf("late %v, want tick 3 alone", late)
	}
	want := map[market.BarKey]int64{{"A", s}: 1, {"A", s + 1e9}: 2, {"B", s + 1e9}: 1}
	if len(bars) != len(want) {
		t.Errorf("bars %v, want %v trades by key", bars, want)
	}
	for k, n := range want {
		if bars[k].Trades != n {
			t.Errorf("bar %v: %d trades, want %d", k, bars[k].Trades, n)
		}
	}
	l.AllowedLateness = 400 * time.Millisecond // now tick 3 is in time
	if _, late := market.ReferenceBars(ticks, market.OnePartition, l); len(late) != 0 {
		t.Errorf("with 400 ms allowed: late %v, want none", late)
	}
}

// The generators' ticks spread over partitions (by symbol) agree with one
// sequence whatever the interleaving: on-time ticks lag within the
// out-of-orderness, late ones far beyond it. ReferenceBars over any
// interleaving of the partitions finds the late ticks EventTimes made.
func TestReferenceBarsAgreesOverEveryInterleavingOfPartitions(t *testing.T) {
	times := market.EventTimes{Seed: 3, Disorder: market.DefaultDisorder, Late: 0.002, LateBy: market.DefaultLateBy}
	const n = 60_000
	rng := rand.New(rand.NewPCG(4, 4))
	start := int64(1_800_000_000) * int64(time.Second)
	var ticks []market.Tick
	var buf []byte
	for id := range n {
		buf = market.Generate(buf[:0], rng, id, times.At(uint64(id), start+int64(id)*int64(50*time.Microsecond)), 0)
		ev, err := market.Decode(buf)
		if err != nil {
			t.Fatal(err)
		}
		ticks = append(ticks, market.Normalise(ev))
	}
	wantBars, wantLate := market.ReferenceBars(ticks, part, market.DefaultLateness())
	var lateIDs []uint64
	for _, tk := range ticks {
		if times.IsLate(tk.ID) {
			lateIDs = append(lateIDs, tk.ID)
		}
	}
	if got := ids(wantLate); !slices.Equal(got, lateIDs) {
		t.Fatalf("late ids %v, want those EventTimes made late %v", got, lateIDs)
	}
	if len(lateIDs) < 60 {
		t.Fatalf("only %d late ticks: the test needs some", len(lateIDs))
	}
	// Partitions by symbol, each in produce order, interleaved at random
	// in runs of up to 500 ticks (a fetch), no partition more than 20,000
	// ticks (1 s) ahead of the one furthest behind, after a first tick of
	// each (as a reader's first fetch brings).
	parts := map[int][]market.Tick{}
	for _, tk := range ticks {
		parts[part(tk)] = append(parts[part(tk)], tk)
	}
	for seed := range uint64(10) {
		r := rand.New(rand.NewPCG(seed, 1))
		var mixed []market.Tick
		left := map[int][]market.Tick{}
		var names []int
		for p, ts := range parts {
			left[p] = ts
			names = append(names, p)
		}
		slices.Sort(names)
		for _, p := range names {
			mixed = append(mixed, left[p][0])
			left[p] = left[p][1:]
		}
		for len(names) > 0 {
			i := r.IntN(len(names))
			p := names[i]
			behind := slices.MinFunc(names, func(a, b int) int { return int(left[a][0].ID) - int(left[b][0].ID) })
			if left[p][0].ID > left[behind][0].ID+20_000 {
				p, i = behind, slices.Index(names, behind)
			}
			n := min(1+r.IntN(500), len(left[p]))
			mixed = append(mixed, left[p][:n]...)
			if left[p] = left[p][n:]; len(left[p]) == 0 {
				names = slices.Delete(names, i, i+1)
			}
		}
		bars, late := market.ReferenceBars(mixed, part, market.DefaultLateness())
		got := ids(late)
		slices.Sort(got)
		if !slices.Equal(got, lateIDs) {
			t.Errorf("interleaving %d: %d late, want %d", seed, len(got), len(lateIDs))
		}
		missing, different, extra := market.BarDiff(bars, wantBars)
		if len(missing)+len(different)+len(extra) > 0 {
			t.Errorf("interleaving %d: %d missing, %d different, %d extra bars", seed, len(missing), len(different), len(extra))
		}
	}
}

// The watermark is the least of the partitions seen so far: a partition
// not seen yet holds nothing back, and one that speaks late finds the
// watermark where the others put it (it never goes back).
func TestReferenceBarsWatermarkIsTheLeastOfThePartitionsSeenAndNeverGoesBack(t *testing.T) {
	const s = 1_000 * int64(time.Second)
	ms := int64(time.Millisecond)
	ticks := []market.Tick{
		tick(1, "A", 10, 1, s+5000*ms), // watermark s+4900ms
		tick(2, "A", 10, 1, s),         // late: its window ended 3.9 s before
		tick(3, "B", 10, 1, s+10*ms),   // partition B's first: behind A, judged by its own watermark: on time
		tick(4, "B", 10, 1, s+4950*ms), // on time: watermark still s+4900ms
		tick(5, "A", 10, 1, s+9000*ms), // B holds the watermark at s+4850ms
		tick(6, "B", 10, 1, s+3900*ms), // its window [s+3s, s+4s) ended 850 ms before: late
		tick(7, "B", 10, 1, s+4000*ms), // window [s+4s, s+5s): on time
	}
	byName := func(t market.Tick) int { return int(t.Symbol[0]) }
	bars, late := market.ReferenceBars(ticks, byName, market.Lateness{OutOfOrderness: 100 * time.Millisecond, AllowedLateness: 200 * time.Millisecond})
	if got := ids(late); !slices.Equal(got, []uint64{2, 6}) {
		t.Errorf("late %v, want [2 6]", got)
	}
	if got := bars[market.BarKey{Symbol: "B", Start: s + 4000*ms}].Trades; got != 2 {
		t.Errorf("B's bar at 4 s has %d trades, want 2", got)
	}
}

// part puts a tick in one of 4 partitions by its symbol.
func part(t market.Tick) int { return int(t.Symbol[0]) % 4 }

func ids(ts []market.Tick) []uint64 {
	out := make([]uint64, len(ts))
	for i, tk := range ts {
		out[i] = tk.ID
	}
	return out
}

func TestBarLineRoundTrips(t *testing.T) {
	b := market.Bar{Symbol: "BRK.B", Start: 1_700_000_000_000_000_000, Open: 1, High: 9, Low: -3, Close: 4,
		Volume: 77, Notional: 1 << 40, Trades: 12, Revision: 2}
	got, err := market.ParseBar(market.AppendBar(nil, &b))
	if err != nil || got != b {
		t.Fatalf("got %+v, %v; want %+v", got, err, b)
	}
	for _, bad := range []string{"", "A,1,2", "A,1,2,3,4,5,6,7,8,x", ",1,2,3,4,5,6,7,8,9", "A,1,2,3,4,5,6,7,8,9,10"} {
		if _, err := market.ParseBar([]byte(bad)); err == nil {
			t.Errorf("ParseBar(%q) accepted", bad)
		}
	}
}
