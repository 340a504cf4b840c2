package sluice

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/internal/auto"
)

// autoTick is how often an Auto stage's pool steps its controller.
var autoTick = auto.Default().Tick

// TestAutoFindsTheCapacityOfASaturatingDependency runs a pipeline under
// synctest against a fake dependency that serves 16 calls at once and
// makes the rest wait: the engine's count settles at 16 or a little
// above, says why, and never runs more goroutines than its max.
func TestAutoFindsTheCapacityOfASaturatingDependency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const capacity, maxWorkers = 16, 64
		var inflight, peak atomic.Int64
		sem := make(chan struct{}, capacity)
		call := func(ctx context.Context, v int) (int, error) {
			n := inflight.Add(1)
			defer inflight.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			sem <- struct{}{} // the dependency queues calls past its capacity
			time.Sleep(2 * time.Millisecond)
			<-sem
			return v, nil
		}
		p := New(t.Context())
		src := From(p, "src", func(ctx context.Context, out *Emitter[int]) error {
			for i := 0; out.Send(i); i++ {
			}
			return nil
		})
		m := Map(p, "call", src, 1, call, Auto(1, maxWorkers))
		var got atomic.Int64
		ForEach(p, "sink", m, 1, func(context.Context, int) error { got.Add(1); return nil })

		var counts []int
		for range 50 { // 5 s
			time.Sleep(autoTick)
			counts = append(counts, stageStats(p, "call").Workers)
		}
		st := stageStats(p, "call")
		p.Drain()
		if err := p.Wait(); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		// At the capacity, with a step probe above it now and then.
		if tail := counts[20:]; !within(tail, capacity, capacity+capacity/4) || above(tail, capacity) > len(tail)/3 {
			t.Fatalf("workers after 2 s range over %d–%d, %d of %d above %d; want %d–%d, at most 1 in 3 above: %v",
				slices.Min(tail), slices.Max(tail), above(tail, capacity), len(tail), capacity, capacity, capacity+capacity/4, counts)
		}
		if st.Auto == nil || st.Auto.Min != 1 || st.Auto.Max != maxWorkers || st.Auto.Changes == 0 || st.Auto.Detail == "" {
			t.Fatalf("Auto stats %+v: want bounds 1 and %d, changes, and a detail", st.Auto, maxWorkers)
		}
		if got := peak.Load(); got > maxWorkers {
			t.Fatalf("%d calls in flight at once, more than the max %d", got, maxWorkers)
		}
		if r := stageStats(p, "call").Running; r != 0 {
			t.Fatalf("%d workers running after Wait, want 0", r)
		}
	})
}

// fakeDep is a dependency under synctest: each call takes base (times
// jitter's factor, if set) once it holds one of tokens' slots, so that at
// most cap(tokens) calls are served at once and the rest queue; hog takes
// slots away for good, as a dependency that comes to serve fewer does.
type fakeDep struct {
	tokens         chan struct{}
	base           time.Duration
	jitter         func() float64
	inflight, peak atomic.Int64
}

func newFakeDep(capacity int, base time.Duration) *fakeDep {
	return &fakeDep{tokens: make(chan struct{}, capacity), base: base}
}

func (d *fakeDep) call(_ context.Context, v int) (int, error) {
	n := d.inflight.Add(1)
	defer d.inflight.Add(-1)
	for p := d.peak.Load(); n > p && !d.peak.CompareAndSwap(p, n); p = d.peak.Load() {
	}
	d.tokens <- struct{}{}
	took := d.base
	if d.jitter != nil {
		took = time.Duration(float64(took) * d.jitter())
	}
	time.Sleep(took)
	<-d.tokens
	return v, nil
}

// hog holds k of the dependency's slots until done is closed.
func (d *fakeDep) hog(k int, done <-chan struct{}) {
	for range k {
		d.tokens <- struct{}{}
	}
	<-done
	for range k {
		<-d.tokens
	}
}

// autoAgainst runs a source, a Map with Auto(1, hi) calling the
// dependency that mk makes, and a sink, for ticks ticks under synctest,
// calling at(dep, i) before tick i, and returns the stage's worker count
// at each tick. The dependency is made in the bubble: its channels must
// be the bubble's for its waits to let time pass.
func autoAgainst(t *testing.T, mk func() *fakeDep, hi, ticks int, at func(dep *fakeDep, i int)) []int {
	var counts []int
	var peak int64
	synctest.Test(t, func(t *testing.T) {
		dep := mk()
		defer func() { peak = dep.peak.Load() }()
		p := New(t.Context())
		src := From(p, "src", func(ctx context.Context, out *Emitter[int]) error {
			for i := 0; out.Send(i); i++ {
			}
			return nil
		})
		m := Map(p, "call", src, 1, dep.call, Auto(1, hi))
		ForEach(p, "sink", m, 1, func(context.Context, int) error { return nil })
		for i := range ticks {
			if at != nil {
				at(dep, i)
			}
			time.Sleep(autoTick)
			counts = append(counts, stageStats(p, "call").Workers)
		}
		p.Drain()
		if err := p.Wait(); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		if r := stageStats(p, "call").Running; r != 0 {
			t.Fatalf("%d workers running after Wait, want 0", r)
		}
	})
	if peak > int64(hi) {
		t.Fatalf("%d calls in flight at once, more than the max %d", peak, hi)
	}
	t.Logf("counts: %v", counts)
	return counts
}

// share is the share of xs within lo–hi.
func share(xs []int, lo, hi int) float64 {
	n := 0
	for _, x := range xs {
		if x >= lo && x <= hi {
			n++
		}
	}
	return float64(n) / float64(len(xs))
}

// The engine against modelled dependencies, under synctest: its count
// follows what each can take.
func TestAutoAgainstModelledDependencies(t *testing.T) {
	t.Run("flat", func(t *testing.T) {
		// Every call takes 2 ms however many are in flight: more workers
		// always pay, up to the max.
		counts := autoAgainst(t, func() *fakeDep { return newFakeDep(4096, 2*time.Millisecond) }, 64, 30, nil)
		if i := slices.Index(counts, 64); i < 0 || i > 15 {
			t.Fatalf("counts %v: want the max, 64, within 1.5 s", counts)
		}
		if tail := counts[slices.Index(counts, 64):]; !within(tail, 64, 64) {
			t.Fatalf("counts %v: want 64 held once reached", counts)
		}
	})
	t.Run("cores", func(t *testing.T) {
		// Two calls at once, as CPU-bound work on two free cores.
		counts := autoAgainst(t, func() *fakeDep { return newFakeDep(2, time.Millisecond) }, 64, 40, nil)
		if tail := counts[15:]; share(tail, 2, 2) < 0.8 || slices.Max(tail) > 3 {
			t.Fatalf("counts %v: want 2 at least 4 ticks in 5 from 1.5 s on, never above 3", counts)
		}
	})
	t.Run("drop", func(t *testing.T) {
		// 32 at once, then 8 from 3 s.
		var done chan struct{}
		var hogs sync.WaitGroup
		counts := autoAgainst(t, func() *fakeDep { return newFakeDep(32, 2*time.Millisecond) }, 128, 70, func(dep *fakeDep, i int) {
			switch i {
			case 30:
				done = make(chan struct{})
				hogs.Go(func() { dep.hog(24, done) })
			case 69:
				close(done)
				hogs.Wait()
			}
		})
		if before := counts[15:30]; share(before, 32, 40) < 0.7 {
			t.Fatalf("counts %v: want 32–40 at least 7 ticks in 10 from 1.5 s to the drop", counts)
		}
		if after := counts[45:]; share(after, 8, 10) < 0.8 || slices.Max(after) > 16 {
			t.Fatalf("counts %v: want 8–10 at least 4 ticks in 5 from 1.5 s after the drop, never above 16", counts)
		}
	})
	t.Run("noisy", func(t *testing.T) {
		// 16 at once, each call's time varying by a lognormal factor.
		counts := autoAgainst(t, func() *fakeDep {
			dep := newFakeDep(16, 2*time.Millisecond)
			var mu sync.Mutex
			rng := rand.New(rand.NewPCG(3, 4))
			dep.jitter = func() float64 {
				mu.Lock()
				defer mu.Unlock()
				return math.Exp(0.5*rng.NormFloat64() - 0.125)
			}
			return dep
		}, 128, 50, nil)
		if tail := counts[20:]; share(tail, 16, 24) < 0.8 || slices.Max(tail) > 32 {
			t.Fatalf("counts %v: want 16–24 at least 4 ticks in 5 after 2 s, never above 32", counts)
		}
	})
}

func stageStats(p *Pipeline, name string) StageStats {
	for _, st := range p.Stats().Stages {
		if st.Name == name {
			return st
		}
	}
	panic("no stage " + name)
}

// TestAutoChurnLosesNothing changes the count of every stage with a pool
// at random every tick while items flow: every item arrives exactly once,
// OrderedMap keeps its order, and no more goroutines run than the max.
func TestAutoChurnLosesNothing(t *testing.T) {
	old := autoChooser
	defer func() { autoChooser = old }()
	var rngMu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	autoChooser = func(lo, hi, n int, _ auto.Tuning) chooser {
		return stepOnly(func(auto.Sample) auto.Decision {
			rngMu.Lock()
			defer rngMu.Unlock()
			return auto.Decision{Count: lo + rng.IntN(hi-lo+1), Reason: auto.Grow, Why: "churn"}
		})
	}
	const items, hi = 20_000, 6
	type build func(p *Pipeline, in Stream[int], f func(context.Context, int) (int, error)) func() []int
	collect := func(p *Pipeline, s Stream[int]) func() []int { return Collect(p, "out", s).Value }
	stages := map[string]build{
		"Map": func(p *Pipeline, in Stream[int], f func(context.Context, int) (int, error)) func() []int {
			return collect(p, Map(p, "s", in, 2, f, Auto(1, hi)))
		},
		"OrderedMap": func(p *Pipeline, in Stream[int], f func(context.Context, int) (int, error)) func() []int {
			return collect(p, OrderedMap(p, "s", in, 2, f, Auto(1, hi)))
		},
		"Filter": func(p *Pipeline, in Stream[int], f func(context.Context, int) (int, error)) func() []int {
			return collect(p, Filter(p, "s", in, 2, func(ctx context.Context, v int) (bool, error) { _, err := f(ctx, v); return true, err }, Auto(1, hi)))
		},
		"FlatMap": func(p *Pipeline, in Stream[int], f func(context.Context, int) (int, error)) func() []int {
			return collect(p, FlatMap(p, "s", in, 2, func(ctx context.Context, v int, emit func(int) bool) error {
				_, err := f(ctx, v)
				emit(v)
				return err
			}, Auto(1, hi)))
		},
		"ForEach": func(p *Pipeline, in Stream[int], f func(context.Context, int) (int, error)) func() []int {
			var mu sync.Mutex
			var got []int
			ForEach(p, "s", in, 2, func(ctx context.Context, v int) error {
				_, err := f(ctx, v)
				mu.Lock()
				got = append(got, v)
				mu.Unlock()
				return err
			}, Auto(1, hi))
			return func() []int { return got }
		},
		"ForEachChunk": func(p *Pipeline, in Stream[int], f func(context.Context, int) (int, error)) func() []int {
			var mu sync.Mutex
			var got []int
			ForEachChunk(p, "s", in, 2, func(ctx context.Context, items []int) error {
				for _, v := range items {
					if _, err := f(ctx, v); err != nil {
						return err
					}
				}
				mu.Lock()
				got = append(got, items...)
				mu.Unlock()
				return nil
			}, Auto(1, hi))
			return func() []int { return got }
		},
	}
	// Small chunks give many boundaries to shed workers at; a trickle of
	// one item at a time keeps workers waiting for input, to be kicked out
	// of the wait while chunks arrive.
	inputs := map[string]func(p *Pipeline, xs []int) Stream[int]{
		"chunks": func(p *Pipeline, xs []int) Stream[int] { return FromSlice(p, "src", xs, Chunk(32)) },
		"trickle": func(p *Pipeline, xs []int) Stream[int] {
			return From(p, "src", func(ctx context.Context, out *Emitter[int]) error {
				for _, x := range xs {
					if !out.Send(x) {
						return nil
					}
					out.Flush()
					time.Sleep(20 * time.Microsecond)
				}
				return nil
			})
		},
	}
	for name, b := range stages {
		for input, in := range inputs {
			t.Run(name+"/"+input, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var inflight, peak atomic.Int64
					f := func(_ context.Context, v int) (int, error) {
						n := inflight.Add(1)
						for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
						}
						time.Sleep(250 * time.Microsecond) // time passes, ticks come
						inflight.Add(-1)
						return v, nil
					}
					p := New(t.Context())
					xs := ints(items)
					out := b(p, in(p, xs), f)
					if err := p.Wait(); err != nil {
						t.Fatalf("Wait: %v", err)
					}
					got := out()
					if name == "OrderedMap" {
						if !slices.Equal(got, xs) {
							t.Fatalf("OrderedMap under churn: got %d items, not in input order", len(got))
						}
					}
					slices.Sort(got)
					if !slices.Equal(got, xs) {
						t.Fatalf("got %d items, want each of %d exactly once", len(got), items)
					}
					if got := peak.Load(); got > hi {
						t.Fatalf("%d calls at once, more than the max %d", got, hi)
					}
					if st := stageStats(p, "s"); st.Auto.Changes < 5 {
						t.Fatalf("%d changes of the count, want churn", st.Auto.Changes)
					}
				})
			})
		}
	}
}

// chooseBy replaces the controller with one that asks for whatever count
// holds at each tick, until the test ends.
func chooseBy(t *testing.T, count *atomic.Int32) {
	old := autoChooser
	t.Cleanup(func() { autoChooser = old })
	autoChooser = func(lo, hi, n int, _ auto.Tuning) chooser {
		return stepOnly(func(auto.Sample) auto.Decision {
			return auto.Decision{Count: int(count.Load()), Reason: auto.Grow, Why: "chosen by the test"}
		})
	}
}

// stepOnly is a chooser that steps f and never watches a probe.
type stepOnly func(auto.Sample) auto.Decision

func (f stepOnly) Step(s auto.Sample) auto.Decision { return f(s) }
func (stepOnly) Watching() bool                     { return false }
func (stepOnly) Refused(auto.Sample) auto.Decision  { return auto.Decision{} }

// A worker shed while it waits for input exits at once, without waiting
// for the next chunk; the items that come later are each handled once, by
// the workers left. OrderedMap's workers wait for their turn to take
// input, the others on the edge itself.
func TestAutoShedsAWorkerWaitingForInputAtOnce(t *testing.T) {
	var count atomic.Int32
	chooseBy(t, &count)
	type build func(p *Pipeline, in Stream[int]) func() []int
	stages := map[string]build{
		"Map": func(p *Pipeline, in Stream[int]) func() []int {
			return Collect(p, "out", Map(p, "s", in, 1, func(_ context.Context, v int) (int, error) { return v, nil }, Auto(1, 8))).Value
		},
		"OrderedMap": func(p *Pipeline, in Stream[int]) func() []int {
			return Collect(p, "out", OrderedMap(p, "s", in, 1, func(_ context.Context, v int) (int, error) { return v, nil }, Auto(1, 8))).Value
		},
		"ForEach": func(p *Pipeline, in Stream[int]) func() []int {
			var mu sync.Mutex
			var got []int
			ForEach(p, "s", in, 1, func(_ context.Context, v int) error {
				mu.Lock()
				got = append(got, v)
				mu.Unlock()
				return nil
			}, Auto(1, 8))
			return func() []int { return got }
		},
	}
	for name, b := range stages {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				count.Store(8)
				gate := make(chan struct{})
				p := New(t.Context())
				src := From(p, "src", func(ctx context.Context, out *Emitter[int]) error {
					for i := range 100 {
						out.Send(i)
						out.Flush()
					}
					select { // then no input until the test says
					case <-gate:
					case <-ctx.Done():
						return ctx.Err()
					}
					for i := 100; i < 200; i++ {
						if !out.Send(i) {
							return nil
						}
					}
					return nil
				})
				got := b(p, src)
				time.Sleep(5 * autoTick)
				synctest.Wait()
				if st := stageStats(p, "s"); st.Workers != 8 || st.Running != 8 {
					t.Fatalf("%d workers wanted, %d running, want 8 and 8 waiting for input", st.Workers, st.Running)
				}
				count.Store(1)
				time.Sleep(2 * autoTick)
				synctest.Wait()
				if st := stageStats(p, "s"); st.Workers != 1 || st.Running != 1 {
					t.Fatalf("%d workers wanted, %d running, want 1 and 1: the 7 shed must exit without waiting for input", st.Workers, st.Running)
				}
				close(gate)
				if err := p.Wait(); err != nil {
					t.Fatalf("Wait: %v", err)
				}
				xs := got()
				slices.Sort(xs)
				if want := ints(200); !slices.Equal(xs, want) {
					t.Fatalf("got %d items, want each of 0–199 once: %v", len(xs), xs)
				}
			})
		})
	}
}

func ints(n int) []int {
	xs := make([]int, n)
	for i := range xs {
		xs[i] = i
	}
	return xs
}

// above counts the xs above k.
func above(xs []int, k int) int {
	n := 0
	for _, x := range xs {
		if x > k {
			n++
		}
	}
	return n
}

func within(xs []int, lo, hi int) bool {
	return slices.Min(xs) >= lo && slices.Max(xs) <= hi
}
