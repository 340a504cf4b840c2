package sluice_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// A few slow items from a fast source reach every worker of a Map without
// a Chunk option: each call below returns only once all the workers are in
// a call at the same time, which needs the items spread over 8 chunks. The
// same through Merge, which passes chunks on whole, through two Merges, and
// through an OrderedMap, which hands on one result chunk per input chunk.
func TestSlowItemsSpreadOverEveryWorker(t *testing.T) {
	for _, path := range []string{"direct", "merge", "merge of merges", "ordered map"} {
		t.Run(path, func(t *testing.T) {
			p := sluice.New(context.Background())
			var opts []sluice.StageOption
			if path == "ordered map" {
				// Its input in chunks of 100: the chunks it hands on
				// must still be sized by the stage after it.
				opts = append(opts, sluice.Chunk(100))
			}
			in := sluice.FromSlice(p, "src", ints(200), opts...)
			switch path {
			case "merge":
				in = sluice.Merge(p, "merge", []sluice.Stream[int]{in})
			case "merge of merges":
				other := sluice.FromSlice(p, "none", []int{})
				in = sluice.Merge(p, "outer", []sluice.Stream[int]{sluice.Merge(p, "inner", []sluice.Stream[int]{in}), other})
			case "ordered map":
				in = sluice.OrderedMap(p, "order", in, 2, func(_ context.Context, v int) (int, error) { return v, nil })
			}
			checkAllWorkersBusyAtOnce(t, p, in, 8, ints(200))
		})
	}
}

// checkAllWorkersBusyAtOnce runs a Map of n workers over in whose calls
// each return only once n calls are in flight together, and checks that
// each of want came out once.
func checkAllWorkersBusyAtOnce(t *testing.T, p *sluice.Pipeline, in sluice.Stream[int], workers int, want []int) {
	t.Helper()
	var mu sync.Mutex
	inFlight, peak := 0, 0
	all := make(chan struct{})
	out := sluice.Map(p, "slow", in, workers, func(ctx context.Context, v int) (int, error) {
		mu.Lock()
		inFlight++
		if inFlight > peak {
			if peak = inFlight; peak == workers {
				close(all)
			}
		}
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		select {
		case <-all:
			return v, nil
		case <-time.After(10 * time.Second):
			return 0, fmt.Errorf("item %d: only %d of %d workers ever busy at once", v, peak, workers)
		}
	})
	got := sluice.Collect(p, "out", out)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, got.Value(), want)
}

// Chunk sizes follow the consumer's cost per item, and Stats shows them:
// one item for slow items, hundreds or more for cheap ones.
//
// It runs in a synctest bubble, where time passes only while goroutines
// sleep: the cheap stage's work takes no time at all, the slow stage's is
// exactly its sleeps, and a busy machine cannot blur the two.
func TestChunkSizeFollowsTheCostOfItems(t *testing.T) {
	synctest.Test(t, testChunkSizeFollowsTheCostOfItems)
}

func testChunkSizeFollowsTheCostOfItems(t *testing.T) {
	p := sluice.New(context.Background())
	slow := sluice.Map(p, "slow", sluice.FromSlice(p, "few", ints(200)), 1, func(_ context.Context, v int) (int, error) {
		time.Sleep(200 * time.Microsecond) // 4× the ~50 µs a chunk should take
		return v, nil
	})
	sluice.Collect(p, "keep", slow)
	cheap := sluice.Map(p, "cheap", sluice.FromSlice(p, "many", ints(200_000)), 1, double)
	sluice.Reduce(p, "sum", cheap, 0, func(a, v int) int { return a + v })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{}
	for _, st := range p.Stats().Stages {
		sizes[st.Name] = st.InChunkSize
	}
	if sizes["slow"] != 1 {
		t.Errorf("slow stage's input chunks: %d items, want 1", sizes["slow"])
	}
	if sizes["cheap"] != sluice.DefaultChunk {
		t.Errorf("cheap stage's input chunks: %d items, want %d", sizes["cheap"], sluice.DefaultChunk)
	}
}

// A consumer that wants full chunks is built after its producer has taken
// its first chunk (at one item): that chunk grows instead of leaving with
// one item, so a bulk sink's first call is not a single row.
func TestFirstChunkGrowsForAConsumerThatWantsFullChunks(t *testing.T) {
	p := sluice.New(context.Background())
	built := make(chan struct{})
	src := sluice.From(p, "src", func(_ context.Context, out *sluice.Emitter[int]) error {
		<-built // the first chunk was taken when From was called
		for i := range 10_000 {
			if !out.Send(i) {
				return nil
			}
		}
		return nil
	})
	var first int
	sluice.ForEachChunk(p, "bulk", src, 1, func(_ context.Context, items []int) error {
		if first == 0 {
			first = len(items)
		}
		return nil
	})
	close(built)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if first < 16 {
		t.Fatalf("first call got %d items, want a full chunk's worth", first)
	}
}
