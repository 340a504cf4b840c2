package sluice_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
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
func TestOrderedMapReorderCountsItemsNotChunks(t *testing.T) {
	for _, window := range []int{4, 256, 1024} {
		t.Run(fmt.Sprint("window=", window), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := sluice.New(t.Context())
				start := time.Now()
				slowStages["OrderedMap"](p, sluice.FromSlice(p, "src", ints(64)), 4, func(int) { time.Sleep(time.Second) }, sluice.Reorder(window))
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
		return sluice.Merge(p, "merge", []sluice.Stream[int]{sluice.FromSlice(p, "a", xs[:h]), sluice.FromSlice(p, "b", xs[h:])})
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

// holdRow builds a stage whose function takes slow per item and reports
// through made when it hands an item to one of its outputs (a dead letter
// included); it returns those outputs as streams of items.
type holdRow struct {
	name  string
	multi bool
	build func(p *sluice.Pipeline, in sluice.Stream[int], n int, made func(v int)) []sluice.Stream[int]
}

// Items the hold test follows: every failing one (dead-lettered) and every
// item v with v%holdEvery == holdEvery/2 (an ordinary output).
const holdEvery = 50

func holdFails(v int) bool { return v%holdEvery == 0 }

// holdFunc is a Map-shaped function that takes 1 ms (fake time) per item,
// fails the items holdFails picks, and reports each followed item to made
// as its call ends.
func holdFunc(made func(int)) func(context.Context, int) (int, error) {
	return func(_ context.Context, v int) (int, error) {
		time.Sleep(time.Millisecond)
		if v%holdEvery == holdEvery/2 || holdFails(v) {
			made(v)
		}
		if holdFails(v) {
			return 0, errBad
		}
		return v, nil
	}
}

// items turns a dead-letter stream into a stream of its items.
func items(p *sluice.Pipeline, dead sluice.Stream[sluice.Failed[int]]) sluice.Stream[int] {
	return sluice.Map(p, "dead-items", dead, 1, func(_ context.Context, f sluice.Failed[int]) (int, error) { return f.Item, nil })
}

var holdRows = []holdRow{
	{"Map", true, func(p *sluice.Pipeline, in sluice.Stream[int], n int, made func(int)) []sluice.Stream[int] {
		var dead sluice.Stream[sluice.Failed[int]]
		out := sluice.Map(p, "stage", in, n, holdFunc(made), sluice.DeadLetter(&dead))
		return []sluice.Stream[int]{out, items(p, dead)}
	}},
	{"OrderedMap", true, func(p *sluice.Pipeline, in sluice.Stream[int], n int, made func(int)) []sluice.Stream[int] {
		var dead sluice.Stream[sluice.Failed[int]]
		out := sluice.OrderedMap(p, "stage", in, n, holdFunc(made), sluice.DeadLetter(&dead))
		return []sluice.Stream[int]{out, items(p, dead)}
	}},
	{"Filter", true, func(p *sluice.Pipeline, in sluice.Stream[int], n int, made func(int)) []sluice.Stream[int] {
		var dead sluice.Stream[sluice.Failed[int]]
		f := holdFunc(made)
		out := sluice.Filter(p, "stage", in, n, func(ctx context.Context, v int) (bool, error) {
			_, err := f(ctx, v)
			return true, err
		}, sluice.DeadLetter(&dead))
		return []sluice.Stream[int]{out, items(p, dead)}
	}},
	{"FlatMap", true, func(p *sluice.Pipeline, in sluice.Stream[int], n int, made func(int)) []sluice.Stream[int] {
		var dead sluice.Stream[sluice.Failed[int]]
		f := holdFunc(made)
		out := sluice.FlatMap(p, "stage", in, n, func(ctx context.Context, v int, emit func(int) bool) error {
			u, err := f(ctx, v)
			if err == nil {
				emit(u)
			}
			return err
		}, sluice.DeadLetter(&dead))
		return []sluice.Stream[int]{out, items(p, dead)}
	}},
	{"ForEach", true, func(p *sluice.Pipeline, in sluice.Stream[int], n int, made func(int)) []sluice.Stream[int] {
		var dead sluice.Stream[sluice.Failed[int]]
		f := holdFunc(func(v int) { // a sink: only its dead letters come out
			if holdFails(v) {
				made(v)
			}
		})
		sluice.ForEach(p, "stage", in, n, func(ctx context.Context, v int) error {
			_, err := f(ctx, v)
			return err
		}, sluice.DeadLetter(&dead))
		return []sluice.Stream[int]{items(p, dead)}
	}},
	// ForEachChunk takes full chunks; the source's Chunk(10) keeps them
	// small. A failed call dead-letters its whole chunk when it returns.
	{"ForEachChunk", true, func(p *sluice.Pipeline, in sluice.Stream[int], n int, made func(int)) []sluice.Stream[int] {
		var dead sluice.Stream[sluice.Failed[int]]
		sluice.ForEachChunk(p, "stage", in, n, func(_ context.Context, vs []int) error {
			time.Sleep(time.Duration(len(vs)) * time.Millisecond)
			if !slices.ContainsFunc(vs, holdFails) {
				return nil
			}
			for _, v := range vs {
				made(v)
			}
			return errBad
		}, sluice.DeadLetter(&dead))
		return []sluice.Stream[int]{items(p, dead)}
	}},
	{"Partition", false, func(p *sluice.Pipeline, in sluice.Stream[int], _ int, made func(int)) []sluice.Stream[int] {
		return sluice.Partition(p, "stage", in, 3, func(v int) int {
			time.Sleep(time.Millisecond)
			if v%holdEvery == holdEvery/2 {
				made(v)
			}
			return v % 7
		})
	}},
}

// A stage kept busy with slow items, its input always waiting, hands on
// every output — dead letters and each output of a fan-out included — as
// the main output: held at most 200 µs after each input chunk (doc.go,
// "Batching and latency"), not until a chunk fills or the input runs dry.
// (Broadcast has no per-item function, so it is never busy with slow
// items; its outputs share the code that Partition's use.)
func TestEveryOutputIsHandedOnAfterItsInputChunk(t *testing.T) {
	const n = 400
	for _, row := range holdRows {
		for _, workers := range []int{1, 4} {
			if workers > 1 && !row.multi {
				continue
			}
			t.Run(fmt.Sprintf("%s/workers=%d", row.name, workers), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					p := sluice.New(t.Context())
					var mu sync.Mutex
					madeAt, arrived := make(map[int]time.Time), make(map[int]time.Duration)
					made := func(v int) {
						mu.Lock()
						madeAt[v] = time.Now()
						mu.Unlock()
					}
					src := sluice.FromSlice(p, "src", ints(n), sluice.Chunk(10))
					for i, out := range row.build(p, src, workers, made) {
						sluice.ForEach(p, fmt.Sprintf("out%d", i), out, 1, func(_ context.Context, v int) error {
							mu.Lock()
							if at, ok := madeAt[v]; ok {
								arrived[v] = time.Since(at)
							}
							mu.Unlock()
							return nil
						})
					}
					if err := p.Wait(); err != nil {
						t.Fatal(err)
					}
					if len(arrived) != len(madeAt) || len(madeAt) < n/holdEvery {
						t.Fatalf("%d followed items arrived of %d made, want every one of at least %d", len(arrived), len(madeAt), n/holdEvery)
					}
					// A chunk of input is at most 10 items here (1 with the
					// adaptive size: each item takes 1 ms).
					const most = 10*time.Millisecond + 200*time.Microsecond
					for v, d := range arrived {
						if d > most {
							t.Errorf("item %d arrived %v after the stage made it, want at most %v", v, d, most)
						}
					}
				})
			})
		}
	}
}
