package par_test

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/seeds"
	"github.com/sluicehq/sluice/par"
)

// splits are the ways a loop can be cut: measured, and fixed grains that
// force the parallel path from two blocks on.
var splits = []struct {
	name string
	opts []par.Option
}{
	{"default", nil},
	{"grain1", []par.Option{par.Grain(1)}},
	{"grain7", []par.Option{par.Grain(7)}},
	{"grain1000", []par.Option{par.Grain(1000)}},
}

func TestForCallsEveryIndexExactlyOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		withProcs(t, procs)
		for _, s := range splits {
			for _, n := range []int{0, 1, 2, 3, 100, 10007} {
				for _, cost := range []int{0, 2000} { // 2000: ~µs per item, so the default shares too
					if cost > 0 && n > 1000 {
						continue
					}
					calls := make([]atomic.Int32, n)
					par.For(n, func(i int) { spin(cost); calls[i].Add(1) }, s.opts...)
					for i := range calls {
						if got := calls[i].Load(); got != 1 {
							t.Fatalf("GOMAXPROCS=%d %s n=%d cost=%d: f(%d) called %d times, want 1", procs, s.name, n, cost, i, got)
						}
					}
				}
			}
		}
	}
}

// TestForSharesSlowItemsAmongGoroutines: once item 0 has shown that items
// take 1 ms, the rest run on more than one goroutine: each call after the
// first waits until another call is in flight too, which only a helper can
// make happen.
func TestForSharesSlowItemsAmongGoroutines(t *testing.T) {
	withProcs(t, 4)
	for _, s := range splits[:2] {
		var inFlight atomic.Int32
		met := make(chan struct{})
		var once sync.Once
		timedOut := atomic.Bool{}
		par.For(4, func(i int) {
			if i == 0 {
				time.Sleep(time.Millisecond)
				return
			}
			if inFlight.Add(1) >= 2 {
				once.Do(func() { close(met) })
			}
			select {
			case <-met:
			case <-time.After(10 * time.Second):
				timedOut.Store(true)
			}
			inFlight.Add(-1)
		}, s.opts...)
		if timedOut.Load() {
			t.Errorf("%s: a call waited 10 s for a second call in flight; want items shared", s.name)
		}
	}
}

func TestMapKeepsInputOrder(t *testing.T) {
	for _, procs := range []int{1, 4} {
		withProcs(t, procs)
		for _, s := range splits {
			for _, n := range []int{0, 1, 5, 1000, 20011} {
				xs := ints(n)
				got := par.Map(xs, func(x int) string { return strconv.Itoa(x * 3) }, s.opts...)
				if len(got) != n {
					t.Fatalf("GOMAXPROCS=%d %s n=%d: len = %d, want %d", procs, s.name, n, len(got), n)
				}
				for i, x := range xs {
					if want := strconv.Itoa(x * 3); got[i] != want {
						t.Fatalf("GOMAXPROCS=%d %s n=%d: out[%d] = %q, want %q", procs, s.name, n, i, got[i], want)
					}
				}
			}
		}
	}
}

// affine is x ↦ a·x + b (mod 2⁶⁴). Composition is associative but not
// commutative, so a Reduce that reorders blocks gets a different answer.
type affine struct{ a, b uint64 }

func then(f, g affine) affine { return affine{f.a * g.a, g.a*f.b + g.b} }

func TestReduceKeepsOrderOfNonCommutativeF(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		withProcs(t, procs)
		for _, s := range splits {
			for _, n := range []int{0, 1, 2, 3, 1000, 200003} {
				xs := make([]affine, n)
				for i, v := range ints(n) {
					xs[i] = affine{uint64(v)*2 + 1, uint64(i)}
				}
				zero := affine{3, 5} // not the identity: folded in once
				want := zero
				for _, x := range xs {
					want = then(want, x)
				}
				if got := par.Reduce(xs, zero, then, s.opts...); got != want {
					t.Fatalf("GOMAXPROCS=%d %s n=%d: Reduce = %v, want %v", procs, s.name, n, got, want)
				}
			}
		}
	}
}

func TestReduceFoldsZeroOnceOnTheLeft(t *testing.T) {
	withProcs(t, 4)
	xs := ints(10000)
	add := func(a, b int) int { return a + b }
	if got, want := par.Reduce(xs, 10, add, par.Grain(100)), 10+seeds.FindSum(xs); got != want {
		t.Errorf("Reduce = %d, want %d", got, want)
	}
	if got := par.Reduce(nil, 10, add); got != 10 {
		t.Errorf("Reduce of nil = %d, want 10", got)
	}
}

// TestReduceWithGrainIsSameForAnyGOMAXPROCS: with a fixed grain the float
// rounding depends on the input and the grain only.
func TestReduceWithGrainIsSameForAnyGOMAXPROCS(t *testing.T) {
	xs := make([]float64, 50001)
	for i := range xs {
		xs[i] = 1 / float64(i+1)
	}
	add := func(a, b float64) float64 { return a + b }
	reduce := func(procs int) float64 {
		t.Helper()
		withProcs(t, procs)
		return par.Reduce(xs, 0, add, par.Grain(333))
	}
	want := reduce(1)
	for _, procs := range []int{2, 3, 8} {
		if got := reduce(procs); got != want {
			t.Fatalf("GOMAXPROCS=%d: Reduce = %v, want %v (GOMAXPROCS=1)", procs, got, want)
		}
	}
}

// onCaller reports whether the running goroutine is the one that called
// par.For: only there is For itself, not just closures made in it, on the
// stack.
func onCaller() bool {
	pc := make([]uintptr, 64)
	frames := runtime.CallersFrames(pc[:runtime.Callers(1, pc)])
	for {
		f, more := frames.Next()
		if f.Function == "github.com/sluicehq/sluice/par.For" {
			return true
		}
		if !more {
			return false
		}
	}
}

// twoGoroutines returns an f for For(2, f, Grain(1)) under GOMAXPROCS ≥ 2:
// each of the two calls waits for the other, so one runs on the caller and
// one on a helper; then it runs onCaller or onHelper.
func twoGoroutines(onCallerF, onHelperF func()) func(int) {
	var barrier sync.WaitGroup
	barrier.Add(2)
	return func(int) {
		barrier.Done()
		barrier.Wait()
		if onCaller() {
			onCallerF()
		} else {
			onHelperF()
		}
	}
}

type boom struct{ n int }

func TestHelperPanicIsRaisedOnCallerWithOriginalValue(t *testing.T) {
	withProcs(t, 2)
	want := &boom{42}
	got := recovered(func() {
		par.For(2, twoGoroutines(func() {}, func() { panic(want) }), par.Grain(1))
	})
	if got != any(want) {
		t.Errorf("recovered %#v, want %#v", got, want)
	}
}

func TestHelperPanicStopsHandingOutBlocks(t *testing.T) {
	withProcs(t, 2)
	const n = 1000
	var calls atomic.Int32
	first := twoGoroutines(func() {}, func() { panic("helper") })
	got := recovered(func() {
		par.For(n, func(i int) {
			if calls.Add(1) <= 2 {
				first(i)
				return
			}
			time.Sleep(time.Millisecond) // the caller's later items: slow
		}, par.Grain(1))
	})
	if got != "helper" {
		t.Errorf("recovered %v, want %q", got, "helper")
	}
	if c := calls.Load(); c >= n {
		t.Errorf("%d calls after a helper panicked, want < %d", c, n)
	}
}

func TestCallerPanicUnwindsAfterHelpersExit(t *testing.T) {
	withProcs(t, 2)
	var helperDone atomic.Bool
	got := recovered(func() {
		par.For(2, twoGoroutines(
			func() { panic("caller") },
			func() { time.Sleep(20 * time.Millisecond); helperDone.Store(true) },
		), par.Grain(1))
	})
	if got != "caller" {
		t.Errorf("recovered %v, want %q", got, "caller")
	}
	if !helperDone.Load() {
		t.Error("the caller's panic reached the test before the helper exited")
	}
}

func TestHelperGoexitIsRepeatedOnCaller(t *testing.T) {
	withProcs(t, 2)
	returned, exited := false, make(chan struct{})
	go func() {
		defer close(exited)
		par.For(2, twoGoroutines(func() {}, runtime.Goexit), par.Grain(1))
		returned = true
	}()
	<-exited
	if returned {
		t.Error("For returned after f called runtime.Goexit on a helper; want the caller to exit too")
	}
}

func TestBadArgumentsPanicNamingPackageAndValue(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func()
		want string
	}{
		{"For n<0", func() { par.For(-3, func(int) {}) }, "-3"},
		{"For nil f", func() { par.For(3, nil) }, "nil function"},
		{"Map nil f", func() { par.Map[int, int]([]int{1}, nil) }, "nil function"},
		{"Reduce nil f", func() { par.Reduce([]int{1}, 0, nil) }, "nil function"},
		{"Grain 0", func() { par.Grain(0) }, "got 0"},
		{"nil Option", func() { par.For(1, func(int) {}, nil) }, "nil Option"},
	} {
		got, _ := recovered(c.f).(string)
		if !strings.HasPrefix(got, "par: ") || !strings.Contains(got, c.want) {
			t.Errorf("%s: panic %q, want one starting \"par: \" and containing %q", c.name, got, c.want)
		}
	}
}

// Grain's contract: fewer than 2n items run on the calling goroutine alone.
// (Items in (n, 2n) made two blocks, and a helper goroutine took the second
// while the caller ran the first.)
func TestGrainRunsFewerThanTwoBlocksOnTheCallerAlone(t *testing.T) {
	withProcs(t, 4)
	for _, tc := range []struct{ items, grain int }{{1, 1}, {3, 2}, {5, 3}, {7, 4}, {199, 100}} {
		var helpers atomic.Int32
		par.For(tc.items, func(i int) {
			if i == 0 {
				time.Sleep(time.Millisecond) // time for a helper to take the next block
			}
			if !onCaller() {
				helpers.Add(1)
			}
		}, par.Grain(tc.grain))
		if n := helpers.Load(); n != 0 {
			t.Errorf("%d items, Grain(%d): %d calls on a helper, want all on the caller", tc.items, tc.grain, n)
		}
	}
}
