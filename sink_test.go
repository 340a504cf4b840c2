package sluice_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

func TestForEachChunkSeesEveryItemOnceInNaturalBatches(t *testing.T) {
	p := sluice.New(context.Background())
	var mu sync.Mutex
	var got []int
	largest := 0
	sluice.ForEachChunk(p, "bulk", sluice.FromSlice(p, "src", ints(10_000)), 3, func(_ context.Context, items []int) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, items...)
		largest = max(largest, len(items))
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, got, ints(10_000))
	// Chunk sizes adapt to the sink's cost per item (a few ns here, tens
	// under the race detector), up to DefaultChunk: a flood must travel in
	// chunks of hundreds of items at least, not a few.
	if largest < 128 || largest > sluice.DefaultChunk {
		t.Fatalf("got largest chunk %d, want 128..%d from a flood", largest, sluice.DefaultChunk)
	}
}

// ForEachChunk's cost is per call, as for a bulk insert: its chunks must
// not shrink because each call takes long.
func TestForEachChunkKeepsFullChunksForSlowCalls(t *testing.T) {
	p := sluice.New(context.Background())
	var calls, largest int
	sluice.ForEachChunk(p, "bulk", sluice.FromSlice(p, "src", ints(20_000)), 1, func(_ context.Context, items []int) error {
		calls++
		largest = max(largest, len(items))
		time.Sleep(2 * time.Millisecond)
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if largest != sluice.DefaultChunk || calls > 20 {
		t.Fatalf("%d calls, largest chunk %d: want full chunks of %d", calls, largest, sluice.DefaultChunk)
	}
}

// A ForEachChunk call allocates nothing, with a call chain or without:
// 10,000 calls of one item each cost the pipeline's own allocations only.
func TestForEachChunkAllocatesNothingPerCall(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop chunks")
	}
	for _, c := range []struct {
		name string
		opts []sluice.StageOption
	}{{"plain", nil}, {"chain", []sluice.StageOption{sluice.Retry(3, 0, 0), sluice.Throttle(noLimit{})}}} {
		t.Run(c.name, func(t *testing.T) {
			xs := ints(10_000)
			allocs := testing.AllocsPerRun(3, func() {
				p := sluice.New(context.Background())
				sluice.ForEachChunk(p, "sink", sluice.FromSlice(p, "src", xs, sluice.Chunk(1)), 1, func(context.Context, []int) error { return nil }, c.opts...)
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
			})
			if allocs > 1000 {
				t.Fatalf("%v allocations for 10000 calls; want the pipeline's own, well under one per call", allocs)
			}
		})
	}
}
