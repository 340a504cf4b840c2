package market_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/cmd/sluice/market"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// clickhouse-go's init starts a clock goroutine that never ends.
		goleak.IgnoreTopFunction("github.com/ClickHouse/clickhouse-go.init.0.func1"))
}

func TestDecodeAcceptsWellFormedEventsAndNormaliseFixesThem(t *testing.T) {
	ev, err := market.Decode([]byte("42,aapl,187.23,100,1700000000000000000"))
	if err != nil {
		t.Fatal(err)
	}
	got := market.Normalise(ev)
	want := market.Tick{ID: 42, Symbol: "AAPL", Price4: 1872300, Size: 100, TS: 1700000000000000000, Notional: 187230000}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestDecodeRejectsEveryKindOfMalformedEvent(t *testing.T) {
	for _, line := range []string{
		"#corrupt#", "1,AAPL,1.5", "1,AAPL,1.5,10,5,extra", ",AAPL,1.5,10,5",
		"1,,1.5,10,5", "1,TOOLONGSYM,1.5,10,5", "1,A$PL,1.5,10,5",
		"1,AAPL,-1.5,10,5", "1,AAPL,x,10,5", "1,AAPL,1.5,0,5", "1,AAPL,1.5,10,-5",
		"x1,AAPL,1.5,10,5", "1,AAPL,1.5.0,10,5", "1,AAPL,.,10,5", "1,AAPL,0.00001,10,5", "1,AAPL,1e9,10,5",
		"1,AAPL,NaN,10,5", "1,AAPL,1.5,10,99999999999999999999", "1,AAPL,1.5,+10,5",
	} {
		if ev, err := market.Decode([]byte(line)); err == nil {
			t.Errorf("market.Decode(%q) = %+v; want an error", line, ev)
		}
	}
}

// The price's fast path (up to 7 digits, a point, up to 4 decimals) and
// the general one (strconv.ParseFloat) agree: ten-thousandths, rounded
// half up.
func TestDecodeReadsPricesInTenThousandths(t *testing.T) {
	for _, c := range []struct {
		price string
		want  int64
	}{
		{"187.23", 1872300}, {"187.2300", 1872300}, {"10.5", 105000}, {"9", 90000}, {"9.", 90000},
		{"0.0001", 1}, {"9999999.9999", 99999999999}, {"1.23456", 12346}, {"1.23454", 12345},
		{"1e2", 1000000}, {".5", 5000}, {"+2.5", 25000},
	} {
		ev, err := market.Decode([]byte("7,aapl," + c.price + ",3,1700000000000000000"))
		if err != nil || ev.Price4 != c.want || ev.ID != 7 || ev.Size != 3 || ev.TS != 1700000000000000000 {
			t.Errorf("decode of price %q: %+v, %v; want price4 %d", c.price, ev, err, c.want)
		}
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for i := range 10000 {
		line := market.Generate(nil, rng, i, 1, 0)
		ev, err := market.Decode(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		p, _ := strconv.ParseFloat(strings.Split(string(line), ",")[2], 64)
		if want := int64(p*1e4 + 0.5); ev.Price4 != want {
			t.Fatalf("%q: price4 %d, want %d (as float)", line, ev.Price4, want)
		}
	}
}

// Decoding a well-formed event of a known symbol allocates nothing.
func TestDecodeAllocatesNothing(t *testing.T) {
	line := []byte("123456,aapl,187.2300,100,1700000000000000000")
	if n := testing.AllocsPerRun(100, func() { _, _ = market.Decode(line) }); n != 0 {
		t.Errorf("decode: %.1f allocations per event, want 0", n)
	}
}

func TestGeneratedEventsDecodeUnlessMadeMalformed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 1000 {
		line := market.Generate(nil, rng, i, 1, 0)
		if _, err := market.Decode(line); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
	}
	bad := 0
	for i := range 1000 {
		ev, err := market.Decode(market.Generate(nil, rng, i, 1, 1))
		if err != nil || ev.Symbol == "ZZZZ" {
			bad++
		}
	}
	if bad != 1000 {
		t.Fatalf("%d of 1000 events made malformed are caught by decode or have no reference data", bad)
	}
}

// Quantiles of the demo's market.Latencies are interpolated within 1/16 and never
// above the largest latency seen.
func TestLatencyQuantilesAreWithinASixteenthAndAtMostTheMax(t *testing.T) {
	var l market.Latencies
	for i := 1; i <= 1000; i++ {
		l.Add(time.Duration(i) * time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.99, 990 * time.Millisecond}} {
		if got := l.Q(c.q); got < c.want*15/16 || got > c.want*17/16 {
			t.Errorf("q(%v) = %v; want within 1/16 of %v", c.q, got, c.want)
		}
	}
	if got := l.Q(1); got > l.Max() || l.Max() != time.Second {
		t.Errorf("q(1) = %v, max %v; want at most the max, 1s", got, l.Max())
	}
	// A latency near the top of its bucket: interpolation alone would
	// answer above it.
	top := time.Duration(1<<33 - 1000)
	var one market.Latencies
	for range 100 {
		one.Add(top)
	}
	if got := one.Q(0.999); got > top || got < top*15/16 {
		t.Errorf("100 market.Latencies of %v: q(0.999) = %v; want at most %[1]v and within 1/16", top, got)
	}
}
