package sluice

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// model is a stage in front of a dependency, as the controller sees it
// over one tick: with n workers, each call takes base while at most
// capacity calls are in flight and proportionally longer past that (the
// dependency queues the rest); a CPU-bound stage is the same with capacity
// the number of free cores.
type model struct {
	base     time.Duration
	capacity int
}

func (m model) sample(n int) sample {
	dt := int64(autoTick)
	t := float64(m.base) * max(1, float64(n)/float64(m.capacity))
	return sample{dt: dt, n: n, busy: int64(n) * dt, items: int64(float64(n) * float64(dt) / t)}
}

// drive runs a controller from n for steps ticks against m, and returns
// the counts it chose, tick by tick, and the reasons of its changes.
func drive(c *controller, m model, steps int) (counts []int, reasons []string) {
	for range steps {
		n, reason, _ := c.step(m.sample(c.n))
		counts = append(counts, n)
		if reason != "" {
			reasons = append(reasons, reason)
		}
	}
	return counts, reasons
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

func TestControllerSettlesAtASaturatingDependencysCapacity(t *testing.T) {
	c := newController(1, 256, 1)
	counts, reasons := drive(c, model{2 * time.Millisecond, 16}, 100)
	if i := slices.Index(counts, 16); i < 0 || i > 6 {
		t.Fatalf("counts %v: want 16 reached by doubling within 6 ticks", counts[:10])
	}
	if tail := counts[20:]; !within(tail, 16, 20) || above(tail, 16) > len(tail)/10 {
		t.Fatalf("counts after 2 s range over %d–%d, %d of %d above 16; want 16–20, at most 1 in 10 above (the dependency serves 16; a probe above is judged and taken back): %v",
			slices.Min(tail), slices.Max(tail), above(tail, 16), len(tail), tail)
	}
	if reasons[0] != AutoGrow || !slices.Contains(reasons, AutoLatency) && !slices.Contains(reasons, AutoNoGain) {
		t.Fatalf("reasons %v: want grow first, then latency or no-gain", reasons)
	}
}

func TestControllerStopsAtTheCoresForCPUBoundWork(t *testing.T) {
	c := newController(1, 256, 1)
	counts, _ := drive(c, model{10 * time.Microsecond, 2}, 100)
	if tail := counts[10:]; !within(tail, 2, 3) {
		t.Fatalf("counts after 1 s range over %d–%d, want 2–3 on 2 cores: %v", slices.Min(tail), slices.Max(tail), tail)
	}
}

func TestControllerFollowsADependencyThatServesFewer(t *testing.T) {
	c := newController(1, 256, 1)
	counts, _ := drive(c, model{2 * time.Millisecond, 32}, 50)
	if tail := counts[20:]; !within(tail, 32, 40) || above(tail, 32) > len(tail)/10 {
		t.Fatalf("counts before the drop range over %d–%d, want 32–40, at most 1 in 10 above 32: %v", slices.Min(tail), slices.Max(tail), tail)
	}
	counts, reasons := drive(c, model{2 * time.Millisecond, 8}, 50)
	if i := slices.IndexFunc(counts, func(n int) bool { return n <= 9 }); i < 0 || i > 3 {
		t.Fatalf("counts after the drop %v: want 9 or fewer within 3 ticks", counts[:10])
	}
	if tail := counts[10:]; !within(tail, 8, 10) || above(tail, 8) > len(tail)/10 {
		t.Fatalf("counts after the drop range over %d–%d, want 8–10, at most 1 in 10 above 8: %v", slices.Min(tail), slices.Max(tail), tail)
	}
	if reasons[0] != AutoLatency {
		t.Fatalf("first reason after the drop %q, want %q", reasons[0], AutoLatency)
	}
}

func TestControllerGivesBackWorkersThatWait(t *testing.T) {
	c := newController(2, 64, 32)
	// The workers are busy a fifth of the time: the input is the
	// bottleneck; then they wait on a Throttle.
	s := sample{dt: int64(autoTick), n: 32, busy: 32 * int64(autoTick) / 5, idle: 32 * int64(autoTick) * 4 / 5, items: 1000}
	n, reason, _ := c.step(s)
	if n != 9 || reason != AutoIdle {
		t.Fatalf("got %d (%q), want 9 (%q): the busy share, 6.4 workers, with a margin", n, reason, AutoIdle)
	}
	s = sample{dt: int64(autoTick), n: 9, busy: 9 * int64(autoTick) / 10, throttled: 9 * int64(autoTick) * 9 / 10, items: 1000}
	n, reason, _ = c.step(s)
	if n != 2 || reason != AutoThrottled {
		t.Fatalf("got %d (%q), want 2, the min (%q)", n, reason, AutoThrottled)
	}
	if n, reason, _ = c.step(s); n != 2 || reason != "" {
		t.Fatalf("got %d (%q) at the min, want it held without a reason", n, reason)
	}
}

func TestControllerNeverLeavesItsBounds(t *testing.T) {
	for _, m := range []model{{time.Millisecond, 1000}, {time.Millisecond, 1}} {
		c := newController(3, 10, 5)
		counts, _ := drive(c, m, 100)
		if !within(counts, 3, 10) {
			t.Fatalf("capacity %d: counts range over %d–%d, want within 3–10", m.capacity, slices.Min(counts), slices.Max(counts))
		}
	}
}

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
		if tail := counts[20:]; !within(tail, capacity, capacity+capacity/4) || above(tail, capacity) > len(tail)/5 {
			t.Fatalf("workers after 2 s range over %d–%d, want %d–%d: %v", slices.Min(tail), slices.Max(tail), capacity, capacity+capacity/4, counts)
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
	autoChooser = func(lo, hi, n int) func(sample) (int, string, string) {
		return func(sample) (int, string, string) {
			rngMu.Lock()
			defer rngMu.Unlock()
			return lo + rng.IntN(hi-lo+1), AutoGrow, "churn"
		}
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
	for name, b := range stages {
		t.Run(name, func(t *testing.T) {
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
				xs := make([]int, items)
				for i := range xs {
					xs[i] = i
				}
				out := b(p, FromSlice(p, "src", xs, Chunk(32)), f) // small chunks: many boundaries to shed workers at
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
