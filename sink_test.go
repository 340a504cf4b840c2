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
