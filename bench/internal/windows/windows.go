package windows

import (
	"fmt"
	"strings"
)

// Key is a window: a symbol and the start of its second.
type Key struct {
	Sym   string
	Start int64
}

// Acc is a window's accumulator: enough for its VWAP.
type Acc struct {
	Volume, Notional, Trades int64
}

// Add folds t into a.
func (a *Acc) Add(t Trade) {
	a.Volume += t.Qty
	a.Notional += t.Price * t.Qty
	a.Trades++
}

// VWAP returns the window's volume-weighted average price, in cents.
func (a Acc) VWAP() float64 { return float64(a.Notional) / float64(a.Volume) }

// WindowStart returns the start of the window event time ts falls in
// (ts ≥ 0).
func WindowStart(ts int64) int64 { return ts - ts%int64(Width) }

// Result is what a program computed: the windows it emitted, folded into
// an order-free digest, and the trades it found late (none, with these
// trades and OutOfOrderness).
type Result struct {
	Windows, Trades, Late int64
	Digest                uint64
	MaxOpen               int // the most windows open at once
}

// Emit adds window k with accumulator a to r.
func (r *Result) Emit(k Key, a Acc) {
	r.Windows++
	r.Trades += a.Trades
	h := uint64(14695981039346656037)
	for i := 0; i < len(k.Sym); i++ {
		h = (h ^ uint64(k.Sym[i])) * 1099511628211
	}
	vwap := uint64(a.VWAP() * 1e6)
	for _, v := range [...]uint64{uint64(k.Start), uint64(a.Volume), uint64(a.Notional), uint64(a.Trades), vwap} {
		h = mix(h ^ v)
	}
	r.Digest += h
}

func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// String is the line a program prints.
func (r Result) String() string {
	return fmt.Sprintf("windows %d trades %d late %d digest %016x", r.Windows, r.Trades, r.Late, r.Digest)
}

// Same reports whether r and o are the same answer (MaxOpen aside).
func (r Result) Same(o Result) bool {
	return r.Windows == o.Windows && r.Trades == o.Trades && r.Late == o.Late && r.Digest == o.Digest
}

// ParseResult reads the line String wrote from a program's output.
func ParseResult(out string) (Result, error) {
	for line := range strings.Lines(out) {
		var r Result
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "windows %d trades %d late %d digest %x", &r.Windows, &r.Trades, &r.Late, &r.Digest); err == nil {
			return r, nil
		}
	}
	return Result{}, fmt.Errorf("no result line in %q", out)
}

// Loop is the hand-written one-goroutine computation: a map of
// accumulators by window, a watermark (the largest event time seen less
// OutOfOrderness), windows emitted once it reaches their end, a trade
// whose window has ended counted late. The zero Loop is ready; it is not
// safe for concurrent use.
type Loop struct {
	open     map[Key]*Acc
	top, wm  int64
	nextScan int64 // the next window end at which to look for windows to emit
	res      Result
}

// Add folds t into its window, then emits the windows the watermark has
// passed.
func (l *Loop) Add(t Trade) {
	if l.open == nil {
		l.open = make(map[Key]*Acc)
	}
	start := WindowStart(t.TS)
	if l.top != 0 && start+int64(Width) <= l.wm {
		l.res.Late++
		return
	}
	k := Key{t.Sym, start}
	a := l.open[k]
	if a == nil {
		a = new(Acc)
		l.open[k] = a
		l.res.MaxOpen = max(l.res.MaxOpen, len(l.open))
	}
	a.Add(t)
	if t.TS > l.top {
		l.top = t.TS
		l.wm = t.TS - int64(OutOfOrderness)
		if l.nextScan == 0 {
			l.nextScan = WindowStart(l.wm) + int64(Width)
		}
		if l.wm >= l.nextScan {
			l.emit(func(k Key) bool { return k.Start+int64(Width) <= l.wm })
			l.nextScan = WindowStart(l.wm) + int64(Width)
		}
	}
}

func (l *Loop) emit(due func(Key) bool) {
	for k, a := range l.open {
		if due(k) {
			l.res.Emit(k, *a)
			delete(l.open, k)
		}
	}
}

// Close emits every window still open (the input has ended) and returns
// the result.
func (l *Loop) Close() Result {
	l.emit(func(Key) bool { return true })
	return l.res
}

// Reference returns the answer for the first n trades: Loop over the
// generator, no JSON.
func Reference(n int) Result {
	var l Loop
	g := NewGen()
	for range n {
		l.Add(g.Next())
	}
	return l.Close()
}
