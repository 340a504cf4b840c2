package sluice_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// slowStage builds, for every stage kind that takes a worker count, a
// stage of n workers whose function calls f on each item.
var slowStages = map[string]func(p *sluice.Pipeline, in sluice.Stream[int], n int, f func(int), opts ...sluice.StageOption){
	"Map": func(p *sluice.Pipeline, in sluice.Stream[int], n int, f func(int), opts ...sluice.StageOption) {
		sluice.ForEach(p, "sink", sluice.Map(p, "slow", in, n, func(_ context.Context, v int) (int, error) { f(v); return v, nil }, opts...), 1, noop)
	},
	"OrderedMap": func(p *sluice.Pipeline, in sluice.Stream[int], n int, f func(int), opts ...sluice.StageOption) {
		sluice.ForEach(p, "sink", sluice.OrderedMap(p, "slow", in, n, func(_ context.Context, v int) (int, error) { f(v); return v, nil }, opts...), 1, noop)
	},
	"Filter": func(p *sluice.Pipeline, in sluice.Stream[int], n int, f func(int), opts ...sluice.StageOption) {
		sluice.ForEach(p, "sink", sluice.Filter(p, "slow", in, n, func(_ context.Context, v int) (bool, error) { f(v); return true, nil }, opts...), 1, noop)
	},
	"FlatMap": func(p *sluice.Pipeline, in sluice.Stream[int], n int, f func(int), opts ...sluice.StageOption) {
		sluice.ForEach(p, "sink", sluice.FlatMap(p, "slow", in, n, func(_ context.Context, v int, emit func(int) bool) error { f(v); emit(v); return nil }, opts...), 1, noop)
	},
	"ForEach": func(p *sluice.Pipeline, in sluice.Stream[int], n int, f func(int), _ ...sluice.StageOption) {
		sluice.ForEach(p, "slow", in, n, func(_ context.Context, v int) error { f(v); return nil })
	},
}

func noop(context.Context, int) error { return nil }

// A pool of slow calls (say HTTP requests) must use every worker from the
// first item: 32 items of 1 s on 8 workers take 4 s, not 16.
func TestAFewSlowItemsSpreadOverEveryWorkerFromTheFirst(t *testing.T) {
	for name, build := range slowStages {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				inFlight, peak := 0, 0
				p := sluice.New(t.Context())
				start := time.Now()
				build(p, sluice.FromSlice(p, "src", ints(32)), 8, func(int) {
					mu.Lock()
					inFlight++
					peak = max(peak, inFlight)
					mu.Unlock()
					time.Sleep(time.Second)
					mu.Lock()
					inFlight--
					mu.Unlock()
				})
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took != 4*time.Second || peak != 8 {
					t.Fatalf("took %v with at most %d calls at once, want 4s with 8", took, peak)
				}
			})
		})
	}
}

// OrderedMap's window counts items in flight, not chunks of the largest
// size: a window of 256 items leaves room for every worker.
func TestOrderedMapWindowCountsItemsNotChunks(t *testing.T) {
	for _, window := range []int{4, 256, 1024} {
		t.Run(fmt.Sprint("window=", window), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := sluice.New(t.Context())
				start := time.Now()
				slowStages["OrderedMap"](p, sluice.FromSlice(p, "src", ints(64)), 4, func(int) { time.Sleep(time.Second) }, sluice.Window(window))
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				if took := time.Since(start); took != 16*time.Second {
					t.Fatalf("64 items of 1 s on 4 workers took %v, want 16s", took)
				}
			})
		})
	}
}

// allocated returns the bytes run allocates. Tests that use it run without
// the race detector (scripts/test runs them so), which makes sync.Pool drop
// chunks at random.
func allocated(t *testing.T, run func()) uint64 {
	if raceEnabled {
		t.Skip("allocation is not measured under the race detector (sync.Pool drops at random); scripts/test runs this test without it")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	run()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Chunks that pass through Merge go back to the edge that made them, so a
// merge recycles its chunks as a straight pipeline does: what it allocates
// does not grow with the items (2M items in fresh chunks would be 16 MB).
func TestMergeRecyclesItsChunks(t *testing.T) {
	const n = 2_000_000
	xs := ints(n)
	run := func(k int, build func(p *sluice.Pipeline, xs []int) sluice.Stream[int]) uint64 {
		return allocated(t, func() {
			p := sluice.New(context.Background())
			r := sluice.Reduce(p, "sum", build(p, xs[:k]), 0, func(a, v int) int { return a + v })
			if err := p.Wait(); err != nil || r.Value() != k*(k-1)/2 {
				t.Fatalf("%v, sum %d, want %d", err, r.Value(), k*(k-1)/2)
			}
		})
	}
	hop := func(p *sluice.Pipeline, xs []int) sluice.Stream[int] {
		return sluice.Map(p, "id", sluice.FromSlice(p, "src", xs), 1, func(_ context.Context, v int) (int, error) { return v, nil })
	}
	merge := func(p *sluice.Pipeline, xs []int) sluice.Stream[int] {
		h := len(xs) / 2
		return sluice.Merge(p, "merge", sluice.FromSlice(p, "a", xs[:h]), sluice.FromSlice(p, "b", xs[h:]))
	}
	straight, merged, fewer := run(n, hop), run(n, merge), run(n/10, merge)
	t.Logf("2M items: straight pipeline with one hop %d bytes, merge of two halves %d; merge of 200k items %d", straight, merged, fewer)
	// The merge has one more edge's chunks in flight than the straight
	// pipeline (two inputs and a two-slot output against two edges).
	if merged > straight*3/2 || merged > fewer+256<<10 {
		t.Fatalf("merging %d items allocated %d bytes (%d for a tenth of them), a straight pipeline %d", n, merged, fewer, straight)
	}
}

// Batch grows a batch as items arrive, so a size meant as "no limit" costs
// nothing up front, and math.MaxInt batches by time alone.
func TestBatchAllocatesForItsItemsOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, size := range []int{1 << 22, math.MaxInt} {
			var got [][]int
			bytes := allocated(t, func() {
				p := sluice.New(t.Context())
				b := sluice.Batch(p, "batch", sluice.FromSlice(p, "src", ints(12)), size, 5*time.Millisecond)
				r := sluice.Collect(p, "c", b)
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				got = r.Value()
			})
			if len(got) != 1 || len(got[0]) != 12 {
				t.Fatalf("size %d: got batches %v, want one of 12 items", size, got)
			}
			if bytes > 256<<10 {
				t.Fatalf("size %d: a pipeline batching 12 ints allocated %d bytes", size, bytes)
			}
		}
	})
}

func TestBatchWithNoSizeLimitLeavesByTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(t.Context())
		src := sluice.From(p, "ticks", func(ctx context.Context, out *sluice.Emitter[int]) error {
			for i := range 10 {
				if !out.Send(i) || !out.Flush() {
					return nil
				}
				time.Sleep(3 * time.Millisecond)
			}
			return nil
		})
		b := sluice.Batch(p, "batch", src, math.MaxInt, 10*time.Millisecond)
		r := sluice.Collect(p, "c", b)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		var flat []int
		for _, batch := range r.Value() {
			flat = append(flat, batch...)
		}
		if len(r.Value()) != 3 || len(flat) != 10 {
			t.Fatalf("got batches %v, want 10 items in 3 batches of at most 10 ms", r.Value())
		}
	})
}

// A stage whose input never runs dry never waits, so it never flushes as
// idle; its consumer may be fast and ask for large chunks. Its items must
// still travel on promptly rather than wait for a chunk to fill.
func TestABusySlowStageHandsItemsOnPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(t.Context())
		made := make(map[int]time.Time)
		var mu sync.Mutex
		slow := sluice.Map(p, "store", sluice.FromSlice(p, "src", ints(200)), 1, func(_ context.Context, v int) (int, error) {
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			made[v] = time.Now()
			mu.Unlock()
			return v, nil
		})
		var worst time.Duration
		sluice.ForEach(p, "publish", slow, 1, func(_ context.Context, v int) error {
			mu.Lock()
			worst = max(worst, time.Since(made[v]))
			mu.Unlock()
			return nil
		})
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if worst > 20*time.Millisecond {
			t.Fatalf("an item waited %v in the slow stage's output, want at most one item's time (20ms)", worst)
		}
	})
}
