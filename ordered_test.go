package sluice_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

func TestOrderedMapKeepsOrderUnderRandomDelays(t *testing.T) {
	for _, workers := range []int{1, 2, 7} {
		for _, window := range []int{0, 1, 300} {
			t.Run(fmt.Sprintf("workers=%d/window=%d", workers, window), func(t *testing.T) {
				const n = 3000
				p := sluice.New(context.Background())
				// Small chunks so that many chunks are in flight at once.
				src := sluice.FromSlice(p, "src", ints(n), sluice.Chunk(7))
				var opts []sluice.StageOption
				if window > 0 {
					opts = append(opts, sluice.Reorder(window))
				}
				var mu sync.Mutex
				rng := rand.New(rand.NewPCG(1, uint64(workers)))
				m := sluice.OrderedMap(p, "slow", src, workers, func(_ context.Context, v int) (int, error) {
					mu.Lock()
					r := rng.IntN(16)
					mu.Unlock()
					switch {
					case r == 0:
						time.Sleep(20 * time.Microsecond)
					case r < 8:
						runtime.Gosched()
					}
					return v * 3, nil
				}, opts...)
				got := sluice.Collect(p, "collect", m)
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				want := ints(n)
				for i := range want {
					want[i] *= 3
				}
				if !slices.Equal(got.Value(), want) {
					g := got.Value()
					for i := range min(len(g), len(want)) {
						if g[i] != want[i] {
							t.Fatalf("got %d items, first difference at %d: %d, want %d", len(g), i, g[i], want[i])
						}
					}
					t.Fatalf("got %d items, want %d", len(g), len(want))
				}
			})
		}
	}
}

func TestOrderedMapErrorStopsIt(t *testing.T) {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "src", ints(10_000))
	m := sluice.OrderedMap(p, "fail", src, 4, func(_ context.Context, v int) (int, error) {
		if v == 777 {
			return 0, fmt.Errorf("bad %d", v)
		}
		return v, nil
	})
	sluice.ForEach(p, "sink", m, 1, func(context.Context, int) error { return nil })
	if err := p.Wait(); err == nil || err.Error() != `sluice: stage "fail": bad 777` {
		t.Fatalf("got %v, want the stage's error", err)
	}
}

// OrderedMap hands on one result chunk per input chunk; its output's Chunk
// option still bounds what its consumer gets at once (a ForEachChunk
// behind it is promised no more than its producer's chunk size).
func TestOrderedMapOutputKeepsItsChunkSize(t *testing.T) {
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := sluice.New(t.Context())
				src := sluice.FromSlice(p, "src", ints(3000), sluice.Chunk(500))
				m := sluice.OrderedMap(p, "om", src, workers, double, sluice.Chunk(10))
				var mu sync.Mutex
				var got []int
				largest := 0
				sluice.ForEachChunk(p, "sink", m, 1, func(_ context.Context, items []int) error {
					mu.Lock()
					defer mu.Unlock()
					largest = max(largest, len(items))
					got = append(got, items...)
					return nil
				})
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				if largest > 10 {
					t.Fatalf("a call got %d items, want at most the 10 of OrderedMap's Chunk(10)", largest)
				}
				want := ints(3000)
				for i := range want {
					want[i] *= 2
				}
				if !slices.Equal(got, want) {
					t.Fatalf("got %d items (head %v), want %d doubled in order", len(got), head(got), len(want))
				}
			})
		})
	}
}
