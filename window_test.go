package sluice_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// trade is a test event: a symbol, a price and an event time.
type trade struct {
	sym string
	px  int
	at  time.Time
}

type tsum struct{ n, sum int }

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// trades returns n trades over nsym symbols, one per ms of event time,
// each shifted back by up to disorder.
func trades(rng *rand.Rand, n, nsym int, disorder time.Duration) []trade {
	ts := make([]trade, n)
	for i := range ts {
		d := time.Duration(0)
		if disorder > 0 {
			d = time.Duration(rng.Int64N(int64(disorder)))
		}
		ts[i] = trade{sym: fmt.Sprintf("s%d", rng.IntN(nsym)), px: rng.IntN(1000), at: t0.Add(time.Duration(i)*time.Millisecond - d)}
	}
	return ts
}

type paneKey struct {
	sym   string
	start int64
}

// refTumbling is the plain loop: the sum and count per symbol per window.
func refWindows(in []trade, size, slide time.Duration) map[paneKey]tsum {
	got := map[paneKey]tsum{}
	for _, x := range in {
		last := x.at.Truncate(slide)
		for s := last; s.After(x.at.Add(-size)); s = s.Add(-slide) {
			k := paneKey{x.sym, s.UnixNano()}
			a := got[k]
			a.n++
			a.sum += x.px
			got[k] = a
		}
	}
	return got
}

func tradeSpec(w sluice.Windows, ooo time.Duration) sluice.WindowSpec[trade, string, tsum] {
	return sluice.WindowSpec[trade, string, tsum]{
		Windows:    w,
		Key:        func(x trade) string { return x.sym },
		Time:       func(x trade) time.Time { return x.at },
		Fold:       func(a *tsum, x trade) { a.n++; a.sum += x.px },
		Merge:      func(a, b *tsum) { a.n += b.n; a.sum += b.sum },
		OutOfOrder: ooo,
	}
}

// runWindow runs in through a Window stage and returns its panes.
func runWindow(t *testing.T, in []trade, n int, spec sluice.WindowSpec[trade, string, tsum]) ([]sluice.Pane[string, tsum], sluice.StageStats) {
	t.Helper()
	p := sluice.New(context.Background())
	out := sluice.Window(p, "win", sluice.FromSlice(p, "in", in), n, spec)
	res := sluice.Collect(p, "c", out)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return res.Value(), statsOf(p, "win")
}

func checkPanes(t *testing.T, label string, got []sluice.Pane[string, tsum], want map[paneKey]tsum, size time.Duration) {
	t.Helper()
	seen := map[paneKey]bool{}
	for _, pn := range got {
		k := paneKey{pn.Key, pn.Start.UnixNano()}
		if seen[k] {
			t.Fatalf("%s: window %v emitted twice", label, k)
		}
		seen[k] = true
		if pn.Revision != 0 || pn.End.Sub(pn.Start) != size {
			t.Fatalf("%s: pane %v: revision %d, length %v", label, k, pn.Revision, pn.End.Sub(pn.Start))
		}
		if w := want[k]; pn.Acc != w || pn.Items != w.n {
			t.Fatalf("%s: window %v = %+v (%d items), want %+v", label, k, pn.Acc, pn.Items, w)
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("%s: %d windows, want %d", label, len(seen), len(want))
	}
}

// Within the out-of-orderness, every window holds exactly the items of the
// plain loop, emitted once, for every worker count.
func TestWindowTumblingAndHoppingMatchThePlainLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, uint64(time.Now().UnixNano())))
	in := trades(rng, 20000, 40, 100*time.Millisecond)
	for _, w := range []struct {
		win         sluice.Windows
		size, slide time.Duration
	}{
		{sluice.Tumbling(time.Second), time.Second, time.Second},
		{sluice.Hopping(time.Second, 250*time.Millisecond), time.Second, 250 * time.Millisecond},
	} {
		want := refWindows(in, w.size, w.slide)
		for n := 1; n <= 8; n++ {
			got, st := runWindow(t, in, n, tradeSpec(w.win, 100*time.Millisecond))
			checkPanes(t, fmt.Sprintf("%v n=%d", w.win, n), got, want, w.size)
			ws := st.Window
			if ws == nil || ws.Late+ws.LateDropped != 0 || ws.Open != 0 || ws.Held != 0 || ws.Emitted != int64(len(want)) || st.Keys != 0 {
				t.Fatalf("%v n=%d: stats %+v keys %d", w.win, n, ws, st.Keys)
			}
		}
	}
}

// refSessions is the plain loop for sessions: sort each key's times, cut
// where two are gap or more apart.
func refSessions(in []trade, gap time.Duration) map[paneKey]tsum {
	by := map[string][]trade{}
	for _, x := range in {
		by[x.sym] = append(by[x.sym], x)
	}
	got := map[paneKey]tsum{}
	for sym, xs := range by {
		sort.SliceStable(xs, func(i, j int) bool { return xs[i].at.Before(xs[j].at) })
		var cur paneKey
		for i, x := range xs {
			if i == 0 || x.at.Sub(xs[i-1].at) >= gap {
				cur = paneKey{sym, x.at.UnixNano()}
			}
			a := got[cur]
			a.n++
			a.sum += x.px
			got[cur] = a
		}
	}
	return got
}

func TestWindowSessionsMatchThePlainLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, uint64(time.Now().UnixNano())))
	// Sparse events: a symbol every ~40 ms on average, so sessions of a
	// 100 ms gap start and end often, and disorder merges some.
	in := trades(rng, 5000, 40, 50*time.Millisecond)
	want := refSessions(in, 100*time.Millisecond)
	for n := 1; n <= 8; n++ {
		got, _ := runWindow(t, in, n, tradeSpec(sluice.Sessions(100*time.Millisecond), 50*time.Millisecond))
		seen := map[paneKey]bool{}
		for _, pn := range got {
			k := paneKey{pn.Key, pn.Start.UnixNano()}
			if seen[k] || pn.Revision != 0 {
				t.Fatalf("n=%d: session %v emitted again (revision %d)", n, k, pn.Revision)
			}
			seen[k] = true
			if w := want[k]; pn.Acc != w {
				t.Fatalf("n=%d: session %v = %+v, want %+v", n, k, pn.Acc, w)
			}
		}
		if len(seen) != len(want) {
			t.Fatalf("n=%d: %d sessions, want %d", n, len(seen), len(want))
		}
	}
}

// Late items: within the lateness they update their window (a new
// revision); beyond it they go to the late stream, counted.
func TestWindowLatenessUpdatesThenRoutesLate(t *testing.T) {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	in := []trade{
		{"a", 1, at(100)},
		{"a", 2, at(900)},
		{"a", 3, at(1500)}, // watermark 1400: window [0,1000) is emitted
		{"a", 4, at(950)},  // late, within 1 s of lateness: revision 1
		{"a", 5, at(2600)}, // watermark 2500
		{"a", 6, at(999)},  // watermark 2500 ≥ 1000 + 1000: late stream
		{"a", 7, at(1200)}, // late for [1000,2000), emitted at 2500: revision 1
	}
	for n := 1; n <= 4; n++ {
		p := sluice.New(context.Background())
		spec := tradeSpec(sluice.Tumbling(time.Second), 100*time.Millisecond)
		spec.Lateness = time.Second
		var late sluice.Stream[sluice.Late[trade]]
		spec.Late = &late
		out := sluice.Window(p, "win", sluice.FromSlice(p, "in", in), n, spec)
		res := sluice.Collect(p, "c", out)
		lres := sluice.Collect(p, "late", late)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, pn := range res.Value() {
			got = append(got, fmt.Sprintf("%d:r%d:%v", pn.Start.Sub(t0).Milliseconds(), pn.Revision, pn.Acc))
		}
		slices.Sort(got)
		want := []string{"0:r0:{2 3}", "0:r1:{3 7}", "1000:r0:{1 3}", "1000:r1:{2 10}", "2000:r0:{1 5}"}
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d: panes %v, want %v", n, got, want)
		}
		if l := lres.Value(); len(l) != 1 || l[0].Item.px != 6 || !l[0].Watermark.Equal(at(2500)) {
			t.Fatalf("n=%d: late %+v, want the item of price 6 at watermark 2500 ms", n, l)
		}
		if ws := statsOf(p, "win").Window; ws.Late != 1 || ws.Updated != 2 || ws.Emitted != 5 {
			t.Fatalf("n=%d: stats %+v", n, ws)
		}
	}
}

// Processing time: windows close by the clock.
func TestWindowProcessingTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(context.Background())
		src := sluice.From(p, "in", func(ctx context.Context, e *sluice.Emitter[int]) error {
			for i := range 30 {
				e.Send(i)
				e.Flush()
				time.Sleep(100 * time.Millisecond)
			}
			return nil
		})
		spec := sluice.WindowSpec[int, struct{}, int]{
			Windows: sluice.Tumbling(time.Second),
			Fold:    func(a *int, v int) { *a += 1 },
		}
		var got []int
		start := time.Now()
		var lags []time.Duration
		sluice.ForEach(p, "store", sluice.Window(p, "win", src, 1, spec), 1, func(_ context.Context, pn sluice.Pane[struct{}, int]) error {
			got = append(got, pn.Acc)
			lags = append(lags, time.Since(pn.End))
			return nil
		})
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, n := range got {
			total += n
		}
		if total != 30 || len(got) < 3 || len(got) > 4 {
			t.Fatalf("panes %v (from %v), want 30 items in 3 or 4 windows", got, start)
		}
		for _, l := range lags[:len(lags)-1] {
			if l != 0 {
				t.Fatalf("a pane left %v after its window's end, want at its end: %v", l, lags)
			}
		}
	})
}

func TestWindowMisuse(t *testing.T) {
	spec := tradeSpec(sluice.Tumbling(time.Second), 0)
	cases := []struct {
		name  string
		mod   func(s *sluice.WindowSpec[trade, string, tsum])
		parts []string
	}{
		{"no windows", func(s *sluice.WindowSpec[trade, string, tsum]) { s.Windows = sluice.Windows{} }, []string{`Window "w"`, "Windows is not set"}},
		{"bad hop", func(s *sluice.WindowSpec[trade, string, tsum]) {
			s.Windows = sluice.Hopping(time.Second, 2*time.Second)
		}, []string{`Window "w"`, "slide ≤ size"}},
		{"no fold", func(s *sluice.WindowSpec[trade, string, tsum]) { s.Fold = nil }, []string{`Window "w"`, "nil Fold"}},
		{"no merge", func(s *sluice.WindowSpec[trade, string, tsum]) {
			s.Windows, s.Merge = sluice.Sessions(time.Second), nil
		}, []string{`Window "w"`, "needs a Merge"}},
		{"negative lateness", func(s *sluice.WindowSpec[trade, string, tsum]) { s.Lateness = -1 }, []string{`Window "w"`, "Lateness must be ≥ 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := spec
			tc.mod(&s)
			p := sluice.New(context.Background())
			mustPanic(t, func() { sluice.Window(p, "w", sluice.FromSlice(p, "s", []trade{}), 1, s) }, tc.parts...)
			cancelAndDrain(p)
		})
	}
}

// A late item within the lateness that extends an emitted session
// re-emits it, merged, with the next revision and the later end.
func TestWindowSessionLateUpdate(t *testing.T) {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	in := []trade{
		{"a", 1, at(0)},
		{"a", 2, at(50)},   // session [0, 150)
		{"a", 3, at(400)},  // watermark 400: [0, 150) emitted; session [400, 500)
		{"a", 4, at(120)},  // late, within 1 s: [0, 220), revision 1
		{"a", 5, at(2000)}, // watermark 2000: [400, 500) emitted, [0, 220) dropped after its lateness
		{"a", 6, at(100)},  // beyond the lateness: late stream
	}
	for n := 1; n <= 3; n++ {
		spec := tradeSpec(sluice.Sessions(100*time.Millisecond), 0)
		spec.Lateness = time.Second
		p := sluice.New(context.Background())
		var late sluice.Stream[sluice.Late[trade]]
		spec.Late = &late
		res := sluice.Collect(p, "c", sluice.Window(p, "win", sluice.FromSlice(p, "in", in), n, spec))
		lres := sluice.Collect(p, "late", late)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, pn := range res.Value() {
			got = append(got, fmt.Sprintf("[%d,%d) r%d %v", pn.Start.Sub(t0).Milliseconds(), pn.End.Sub(t0).Milliseconds(), pn.Revision, pn.Acc))
		}
		slices.Sort(got)
		want := []string{"[0,150) r0 {2 3}", "[0,220) r1 {3 7}", "[2000,2100) r0 {1 5}", "[400,500) r0 {1 3}"}
		if !slices.Equal(got, want) || len(lres.Value()) != 1 || lres.Value()[0].Item.px != 6 {
			t.Fatalf("n=%d: panes %v, late %v; want %v and the item of price 6", n, got, lres.Value(), want)
		}
	}
}
