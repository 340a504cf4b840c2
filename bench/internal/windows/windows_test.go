package windows_test

import (
	"bytes"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/bench/internal/windows"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestJSONLinesRoundTripThroughEncodingJSON(t *testing.T) {
	g := windows.NewGen()
	var buf []byte
	for range 1000 {
		want := g.Next()
		buf = windows.AppendJSON(buf[:0], want)
		if bytes.Count(buf, []byte{'\n'}) != 1 || buf[len(buf)-1] != '\n' {
			t.Fatalf("line %q: want one newline, at the end", buf)
		}
		got, err := windows.Decode(buf[:len(buf)-1])
		if err != nil || got != want {
			t.Fatalf("decoded %+v, %v; want %+v", got, err, want)
		}
	}
}

// The generator's trades lag by at most Disorder and cover every symbol;
// the loop finds none late and emits every trade once, in windows that
// sum to what a map without any watermark computes.
func TestLoopEmitsEveryTradeInItsWindowAndNoneLate(t *testing.T) {
	const n = 300_000
	g := windows.NewGen()
	var l windows.Loop
	all := map[windows.Key]windows.Acc{}
	var prev int64
	for i := range n {
		tr := g.Next()
		if i > 0 && tr.TS < prev-int64(windows.Disorder)-int64(1e9)/windows.Rate {
			t.Fatalf("trade %d at %d, more than Disorder behind %d", i, tr.TS, prev)
		}
		prev = max(prev, tr.TS)
		l.Add(tr)
		k := windows.Key{Sym: tr.Sym, Start: windows.WindowStart(tr.TS)}
		a := all[k]
		a.Add(tr)
		all[k] = a
	}
	got := l.Close()
	var want windows.Result
	for k, a := range all {
		want.Emit(k, a)
	}
	if !got.Same(want) || got.Late != 0 || got.Trades != n {
		t.Fatalf("loop %v, want %v with %d trades, none late", got, want, n)
	}
	if got.MaxOpen > windows.Symbols*int(windows.OutOfOrderness/windows.Width+2) {
		t.Errorf("%d windows open at once, want O(symbols × open windows) = at most %d", got.MaxOpen, windows.Symbols*int(windows.OutOfOrderness/windows.Width+2))
	}
	if ref := windows.Reference(n); !ref.Same(got) {
		t.Errorf("Reference(%d) = %v, want %v", n, ref, got)
	}
}

func TestLoopCountsATradeLateOnceItsWindowHasEnded(t *testing.T) {
	var l windows.Loop
	s := int64(1_000_000_000_000)
	l.Add(windows.Trade{Sym: "A", Price: 1, Qty: 1, TS: s})
	l.Add(windows.Trade{Sym: "A", Price: 1, Qty: 1, TS: s + int64(windows.OutOfOrderness) + 2e9}) // the watermark passes s+2s
	l.Add(windows.Trade{Sym: "A", Price: 1, Qty: 1, TS: s + 5e8})                                 // its window [s, s+1s) was emitted
	got := l.Close()
	if got.Late != 1 || got.Trades != 2 || got.Windows != 2 {
		t.Errorf("got %v, want 2 windows of 1 trade each and 1 late", got)
	}
}

func TestParseResultReadsWhatStringWrites(t *testing.T) {
	r := windows.Result{Windows: 3, Trades: 7, Late: 1, Digest: 0xfeedface12345678}
	got, err := windows.ParseResult("noise\n" + r.String() + "\nVmHWM: 1 kB\n")
	if err != nil || !got.Same(r) {
		t.Fatalf("got %v, %v; want %v", got, err, r)
	}
	if _, err := windows.ParseResult("nothing here"); err == nil {
		t.Error("ParseResult accepted output without a result line")
	}
}
