package sluice

import (
	"context"
	"testing"
	"time"
)

// measuredEdge builds a pipeline with one edge of ints, consumed by a
// stage that measures, and a receiver on it; no goroutine is started.
func measuredEdge(t *testing.T, opts ...StageOption) (*edge[int], *receiver[int]) {
	t.Helper()
	p := New(context.Background())
	src := newStage(p, kindSource, "src", 1)
	e := newEdge[int](p, src, 1, stageOptions(kindSource, "src", opts))
	sink := newStage(p, kindForEach, "sink", 1)
	consume(p, sink, Stream[int]{e}, 1)
	e.measured(0)
	t.Cleanup(func() { p.cancel(nil) })
	return e, newReceiver(e, 0, sink.workers[0])
}

// tuneCase returns a measured edge and a function that reports a chunk of
// n items on which the worker was busy for busy ns and blocked for blocked
// ns.
func tuneCase(t *testing.T, opts ...StageOption) (*edge[int], func(n int, busy, blocked int64)) {
	t.Helper()
	e, r := measuredEdge(t, opts...)
	return e, func(n int, busy, blocked int64) {
		r.b0 = r.w.blocked.Load()
		r.w.blocked.Add(blocked)
		r.t0 = nowNs() - busy - blocked
		r.tune(n)
	}
}

func TestTuneGrowsAtOnceForCheapItems(t *testing.T) {
	e, report := tuneCase(t)
	if got := e.limit.Load(); got != 1 {
		t.Fatalf("first limit %d, want 1: a handful of slow items must spread from the first", got)
	}
	report(DefaultChunk, 1_000, 0) // under a ns an item: a full chunk is far under chunkWork
	if got := e.limit.Load(); got != DefaultChunk {
		t.Fatalf("limit after a cheap chunk = %d, want %d", got, DefaultChunk)
	}
}

func TestTuneShrinksOnlyAfterFourSlowChunks(t *testing.T) {
	e, report := tuneCase(t)
	report(DefaultChunk, 1_000, 0)
	for i := range 3 {
		report(DefaultChunk, 2_000*DefaultChunk, 0) // 2 µs an item: 4 ms a chunk, under 100× the budget
		if got := e.limit.Load(); got != DefaultChunk {
			t.Fatalf("limit after %d slow chunk(s) = %d, want it kept at %d", i+1, got, DefaultChunk)
		}
	}
	report(DefaultChunk, 2_000*DefaultChunk, 0)
	if got := e.limit.Load(); got != 16 {
		t.Fatalf("limit after 4 slow chunks = %d, want 16", got)
	}
	// A cheap chunk in between starts the count again.
	report(DefaultChunk, 1_000, 0)
	report(4, 4*20_000, 0) // 20 µs an item: want 2
	report(4, 4*20_000, 0)
	report(DefaultChunk, 1_000, 0)
	report(4, 4*20_000, 0)
	if got := e.limit.Load(); got != DefaultChunk {
		t.Fatalf("limit = %d, want %d: shrinking needs 4 slow chunks in a row", got, DefaultChunk)
	}
}

func TestTuneShrinksAtOnceAfterAChunkFarOverBudget(t *testing.T) {
	e, report := tuneCase(t)
	report(DefaultChunk, 1_000, 0)
	report(DefaultChunk, 2_000_000*DefaultChunk, 0) // 2 ms an item: 4 s for the chunk
	if got := e.limit.Load(); got != 1 {
		t.Fatalf("limit after a chunk of 4 s = %d, want 1 at once", got)
	}
}

func TestTuneIsPowerOfTwoNearChunkWork(t *testing.T) {
	e, report := tuneCase(t)
	for range 4 {
		report(10, 10*1_000, 0) // 1 µs an item: 50 per chunkWork, rounded down to 32
	}
	if got := e.limit.Load(); got != 32 {
		t.Fatalf("limit = %d, want 32", got)
	}
}

func TestTuneDoesNotCountWaits(t *testing.T) {
	e, report := tuneCase(t)
	for range 4 {
		report(DefaultChunk, 1_000, 50_000_000) // 50 ms waiting for room, 1 µs of work
	}
	if got := e.limit.Load(); got != DefaultChunk {
		t.Fatalf("limit = %d, want %d: time blocked downstream is not work", got, DefaultChunk)
	}
}

func TestTuneStaysUnderTheCeiling(t *testing.T) {
	p := New(context.Background())
	t.Cleanup(func() { p.cancel(nil) })
	src := newStage(p, kindSource, "src", 1)
	e := newEdge[int](p, src, 1, stageConfig{})
	sink := newStage(p, kindForEach, "sink", 1)
	consume(p, sink, Stream[int]{e}, 1)
	e.measured(100)
	r := newReceiver(e, 0, sink.workers[0])
	r.t0 = nowNs() - 1_000
	r.tune(DefaultChunk)
	if got := e.limit.Load(); got != 100 {
		t.Fatalf("limit = %d, want the ceiling of 100", got)
	}
}

func TestChunkOptionTurnsTuningOff(t *testing.T) {
	e, _ := tuneCase(t, Chunk(64))
	if e.adapt || e.limit.Load() != 64 {
		t.Fatalf("adapt %v, limit %d: want a fixed limit of 64", e.adapt, e.limit.Load())
	}
}

// A wait for input before a chunk arrives is not subtracted from the work
// on that chunk: it would make slow items look free.
func TestWaitingForAChunkIsNotPartOfItsWork(t *testing.T) {
	e, r := measuredEdge(t)
	go func() {
		// The 5 ms are counted from when the receiver starts waiting:
		// sleeping from before then could leave its wait shorter.
		for r.w.waitSince.Load() == 0 {
			time.Sleep(10 * time.Microsecond)
		}
		time.Sleep(5 * time.Millisecond)
		e.ch <- &chunk[int]{items: []int{1}}
	}()
	c, _, _ := r.next(nil, nil)
	if c == nil {
		t.Fatal("got no chunk")
	}
	if waited := r.w.blocked.Load(); waited < int64(5*time.Millisecond) || r.b0 != waited {
		t.Fatalf("blocked %d ns, measurement base %d: want the ≥ 5 ms wait counted before the chunk's work starts", waited, r.b0)
	}
}
