package sluice_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice"
)

// calls records the calls of a ForEachChunk function: a copy of each
// call's items.
type calls[T any] struct {
	mu sync.Mutex
	of [][]T
}

func (c *calls[T]) add(items []T) {
	c.mu.Lock()
	c.of = append(c.of, slices.Clone(items))
	c.mu.Unlock()
}

func TestGatherJoinsTheChunksWaitingBehindABusyCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(t.Context())
		release := make(chan struct{})
		var got calls[int]
		sluice.ForEachChunk(p, "sink", sluice.FromSlice(p, "src", ints(100), sluice.Chunk(10)), 1, func(_ context.Context, items []int) error {
			if len(got.of) == 0 {
				<-release // the producer fills the edge meanwhile
			}
			got.add(items)
			return nil
		}, sluice.Gather(35))
		synctest.Wait()
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		var all []int
		most := 0
		for _, c := range got.of {
			all = append(all, c...)
			most = max(most, len(c))
		}
		if !slices.Equal(all, ints(100)) {
			t.Fatalf("items: got %v, want 0..99 once each, in order", all)
		}
		// Without Gather: ten calls of 10. With it: the first call, then
		// calls of 35 while chunks wait.
		if most != 35 || len(got.of) > 4 {
			t.Fatalf("call sizes: got %v, want ≤ 4 calls, the largest of 35", sizes(got.of))
		}
	})
}

func TestGatherLetsNItemsWaitWhileACallRuns(t *testing.T) {
	for _, c := range []struct {
		name      string
		opts      []sluice.StageOption
		wantSlots int
	}{
		{"default buffer", nil, 30},                                // 300 items in chunks of 10
		{"Buffer(50)", []sluice.StageOption{sluice.Buffer(50)}, 5}, // the user's bound is kept
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := sluice.New(t.Context())
				release := make(chan struct{})
				var got calls[int]
				src := sluice.FromSlice(p, "src", ints(1000), append([]sluice.StageOption{sluice.Chunk(10)}, c.opts...)...)
				sluice.ForEachChunk(p, "sink", src, 1, func(_ context.Context, items []int) error {
					if len(got.of) == 0 {
						<-release
					}
					got.add(items)
					return nil
				}, sluice.Gather(300))
				synctest.Wait()
				var slots int
				for _, e := range p.Stats().Edges {
					if e.From == "src" {
						slots = e.ChunkCap
					}
				}
				close(release)
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				if slots != c.wantSlots {
					t.Fatalf("the input holds %d chunks; want %d", slots, c.wantSlots)
				}
				// The 300 items that waited go in one call.
				if most := slices.Max(sizes(got.of)); c.opts == nil && most != 300 {
					t.Fatalf("call sizes %v; want one of the 300 items that waited", sizes(got.of))
				}
			})
		})
	}
}

func TestGatherHandsOverALargerChunkNItemsAtATime(t *testing.T) {
	p := sluice.New(t.Context())
	var got calls[int]
	sluice.ForEachChunk(p, "sink", sluice.FromSlice(p, "src", ints(100), sluice.Chunk(100)), 1, func(_ context.Context, items []int) error {
		got.add(items)
		return nil
	}, sluice.Gather(30))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if s := sizes(got.of); !slices.Equal(s, []int{30, 30, 30, 10}) {
		t.Fatalf("call sizes: got %v, want [30 30 30 10]", s)
	}
	if all := slices.Concat(got.of...); !slices.Equal(all, ints(100)) {
		t.Fatalf("items: got %v, want 0..99 in order", all)
	}
}

func TestGatherCountsABatchAsItsLength(t *testing.T) {
	var batches [][]int
	for _, n := range []int{10, 10, 10, 40, 5, 5} {
		batches = append(batches, make([]int, n))
	}
	p := sluice.New(t.Context())
	var got calls[[]int]
	sluice.ForEachChunk(p, "sink", sluice.FromSlice(p, "src", batches, sluice.Chunk(100)), 1, func(_ context.Context, bs [][]int) error {
		got.add(bs)
		return nil
	}, sluice.Gather(25))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	var shape [][]int
	for _, c := range got.of {
		shape = append(shape, sizes(c))
	}
	// 10+10 fit in 25 and a third 10 does not; 40 is over 25 and goes
	// alone; 5+5.
	want := [][]int{{10, 10}, {10}, {40}, {5, 5}}
	if !slices.EqualFunc(shape, want, slices.Equal) {
		t.Fatalf("batches per call (their lengths): got %v, want %v", shape, want)
	}
}

// TestGatherKeepsABatchOverNAloneAfterAnEmptyOne: an empty batch weighs
// nothing, yet a call that holds one is not empty, so a batch longer than
// n that waits behind it goes in a call of its own.
func TestGatherKeepsABatchOverNAloneAfterAnEmptyOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		batches := [][]int{make([]int, 1), make([]int, 100), {}, make([]int, 111)}
		p := sluice.New(t.Context())
		release := make(chan struct{})
		var got calls[[]int]
		src := sluice.FromSlice(p, "src", batches, sluice.Chunk(1))
		sluice.ForEachChunk(p, "sink", src, 1, func(_ context.Context, bs [][]int) error {
			if len(got.of) == 0 {
				<-release // the other chunks wait meanwhile
			}
			got.add(bs)
			return nil
		}, sluice.Gather(100))
		synctest.Wait()
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		var shape [][]int
		for _, c := range got.of {
			shape = append(shape, sizes(c))
		}
		want := [][]int{{1}, {100}, {0}, {111}}
		if !slices.EqualFunc(shape, want, slices.Equal) {
			t.Fatalf("batches per call (their lengths): got %v, want %v", shape, want)
		}
	})
}

// TestGatherNeverPassesNButForALoneBatch checks random batches (many
// empty, some over n) in random chunks, every chunk waiting behind a
// held first call, against what Gather's doc promises: every batch once,
// in order; no empty call; and no call over n items unless it is a single
// batch over n.
func TestGatherNeverPassesNButForALoneBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 6))
	for round := range 200 {
		n := 1 + rng.IntN(120)
		batches := make([][]int, 1+rng.IntN(60))
		next := 0
		for i := range batches {
			k := 0
			switch rng.IntN(4) {
			case 0: // empty
			case 1:
				k = n + rng.IntN(n+1) // n or more
			default:
				k = rng.IntN(n + 1)
			}
			batches[i] = make([]int, k)
			for j := range batches[i] {
				batches[i][j] = next
				next++
			}
		}
		chunk := 1 + rng.IntN(8)
		synctest.Test(t, func(t *testing.T) {
			p := sluice.New(t.Context())
			release := make(chan struct{})
			var got calls[[]int]
			src := sluice.FromSlice(p, "src", batches, sluice.Chunk(chunk))
			sluice.ForEachChunk(p, "sink", src, 1, func(_ context.Context, bs [][]int) error {
				if len(got.of) == 0 {
					<-release
				}
				got.add(bs)
				return nil
			}, sluice.Gather(n))
			synctest.Wait()
			close(release)
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			var all [][]int
			for _, c := range got.of {
				w := 0
				for _, b := range c {
					w += len(b)
				}
				if len(c) == 0 || (w > n && len(c) > 1) {
					t.Fatalf("round %d, Gather(%d), chunks of %d: a call of batches %v (%d items); want 1 to %d items, or one batch alone", round, n, chunk, sizes(c), w, n)
				}
				all = append(all, c...)
			}
			if !slices.EqualFunc(all, batches, slices.Equal) {
				t.Fatalf("round %d: the calls' batches %v, want every batch once in order %v", round, sizes(all), sizes(batches))
			}
		})
	}
}

func TestGatherWithDeadLetterSettlesEveryItemOfAFailedCallOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(t.Context())
		release := make(chan struct{})
		bad := errors.New("a call holding a multiple of 25")
		var stored, dead calls[int]
		var deadLetters sluice.Stream[sluice.Failed[int]]
		sluice.ForEachChunk(p, "sink", sluice.FromSlice(p, "src", ints(200), sluice.Chunk(10)), 1, func(_ context.Context, items []int) error {
			if len(stored.of) == 0 {
				<-release
			}
			for _, v := range items {
				if v%25 == 0 {
					return bad
				}
			}
			stored.add(items)
			return nil
		}, sluice.Gather(40), sluice.Retry(2, 0, 0), sluice.DeadLetter(&deadLetters))
		sluice.ForEach(p, "dead", deadLetters, 1, func(_ context.Context, f sluice.Failed[int]) error {
			if !errors.Is(f.Err, bad) {
				t.Errorf("dead letter %d: error %v, want %v", f.Item, f.Err, bad)
			}
			dead.add([]int{f.Item})
			return nil
		})
		synctest.Wait()
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		all := append(slices.Concat(stored.of...), slices.Concat(dead.of...)...)
		slices.Sort(all)
		if !slices.Equal(all, ints(200)) {
			t.Fatalf("stored and dead-lettered: got %d items %v, want 0..199 once each", len(all), all)
		}
		for _, v := range slices.Concat(stored.of...) {
			if v%25 == 0 {
				t.Fatalf("item %d was stored by a call that failed", v)
			}
		}
	})
}

func sizes[T any](xs [][]T) []int {
	s := make([]int, len(xs))
	for i, x := range xs {
		s[i] = len(x)
	}
	return s
}

// A producer that is done before its stream's consumer is built — here
// with nothing to send — leaves a closed stream the consumer then drains;
// one with items waits for the consumer and hands them on.
func TestAStreamConsumedAfterItsProducerIsDoneOrWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(t.Context())
		empty := sluice.FromSlice(p, "empty", []int{})
		full := sluice.FromSlice(p, "full", ints(5000))
		synctest.Wait() // "empty" has exited; "full" waits for its consumer
		a := sluice.Collect(p, "a", empty)
		b := sluice.Collect(p, "b", full)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if len(a.Value()) != 0 || !slices.Equal(b.Value(), ints(5000)) {
			t.Fatalf("got %d and %d items; want 0 and 0..4999", len(a.Value()), len(b.Value()))
		}
	})
}
