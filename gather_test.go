package sluice_test

import (
	"context"
	"errors"
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
