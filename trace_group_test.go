package sluice_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// The trace of an item through the stages that group items — Batch,
// ForEachChunk and Gather, Keyed, Window — in linkTracer's terms
// (trace_follow_test.go).

// A batch's span links the traces of its items; Unbatch gives each item
// its own again.
func TestABatchsSpanLinksItsItemsTracesAndUnbatchKeepsEach(t *testing.T) {
	const n = 500
	var tr linkTracer
	var rec traces
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	b := sluice.Batch(p, "batch", mark(p, &tr, &rec, t, "mark", sluice.FromSlice(p, "in", seq(n)), 3), 16, 0)
	again := sluice.Map(p, "write", b, 2, func(ctx context.Context, items []int) ([]int, error) {
		var want []int
		for _, v := range items {
			rec.mu.Lock()
			want = append(want, rec.roots[v][0])
			rec.mu.Unlock()
		}
		slices.Sort(want)
		if got := tr.links(t, ctx); !slices.Equal(got, want) && len(items) > 1 {
			t.Errorf("batch %v: its span links traces %v, want its items' %v", items, got, want)
		}
		if len(items) == 1 {
			rec.saw(items[0], tr.root(t, ctx))
		}
		return items, nil
	})
	store(p, &tr, &rec, t, "store", sluice.Unbatch(p, "unbatch", again), 2)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkOneTraceEach(t, &rec, n)
}

// ForEachChunk's span links the traces of the items of its call, Gather's
// several chunks included.
func TestAChunkSinksSpanLinksItsItemsTraces(t *testing.T) {
	const n = 2000
	for _, gather := range []int{0, 300} {
		var tr linkTracer
		var rec traces
		p := sluice.New(context.Background(), sluice.Tracing(&tr))
		var opts []sluice.StageOption
		if gather > 0 {
			opts = append(opts, sluice.Gather(gather))
		}
		sluice.ForEachChunk(p, "store", mark(p, &tr, &rec, t, "mark", sluice.FromSlice(p, "in", seq(n)), 2), 2, func(ctx context.Context, items []int) error {
			got := tr.links(t, ctx)
			var want []int
			for _, v := range items {
				rec.mu.Lock()
				want = append(want, rec.roots[v][0])
				rec.mu.Unlock()
			}
			slices.Sort(want)
			if len(items) > 1 && !slices.Equal(got, want) {
				t.Errorf("gather %d: a call on %d items links %d traces, want its items' %d", gather, len(items), len(got), len(want))
			}
			if len(items) == 1 {
				rec.saw(items[0], tr.root(t, ctx))
			}
			return nil
		}, opts...)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		checkOneTraceEach(t, &rec, n)
	}
}

func TestTheTraceFollowsAnItemThroughKeyed(t *testing.T) {
	const n = 1000
	var tr linkTracer
	var rec traces
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	src := mark(p, &tr, &rec, t, "mark", sluice.FromSlice(p, "in", seq(n)), 2)
	sums := sluice.Keyed(p, "sum", src, 3, sluice.KeyFuncs[int, int, int, int]{
		Key: func(v int) int { return v % 17 },
		Item: func(_ context.Context, _ int, sum *int, v int, emit func(int) bool) error {
			*sum += v
			emit(v)
			return nil
		},
	})
	store(p, &tr, &rec, t, "store", sums, 2)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkOneTraceEach(t, &rec, n)
}

// A window's pane continues the trace of the item that opened the window.
func TestAWindowsPaneContinuesTheTraceOfTheItemThatOpenedIt(t *testing.T) {
	for _, workers := range []int{1, 2} { // one runs on the router's goroutine
		var tr linkTracer
		var rec traces
		p := sluice.New(context.Background(), sluice.Tracing(&tr))
		src := mark(p, &tr, &rec, t, "mark", sluice.FromSlice(p, "in", seq(1000)), 1)
		type first struct {
			v   int
			set bool
		}
		panes := sluice.Window(p, "win", src, workers, sluice.WindowSpec[int, int, first]{
			Windows: sluice.Tumbling(10 * time.Millisecond),
			Key:     func(v int) int { return v % 3 },
			Time:    func(v int) time.Time { return time.Unix(0, int64(v)*int64(time.Millisecond)) },
			Fold: func(f *first, v int) {
				if !f.set {
					*f = first{v, true}
				}
			},
		})
		var opened sync.Map
		sluice.ForEach(p, "store", panes, 2, func(ctx context.Context, pn sluice.Pane[int, first]) error {
			rec.saw(pn.Acc.v, tr.root(t, ctx))
			opened.Store(pn.Acc.v, true)
			return nil
		})
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		rec.mu.Lock()
		panesSeen := 0
		for v, roots := range rec.roots {
			if _, ok := opened.Load(v); !ok {
				continue
			}
			panesSeen++
			if len(roots) != 2 || roots[0] != roots[1] {
				rec.mu.Unlock()
				t.Fatalf("%d workers: item %d opened a window: got its spans and its pane's in traces %v, want one", workers, v, roots)
			}
		}
		rec.mu.Unlock()
		if panesSeen == 0 {
			t.Fatalf("%d workers: no pane", workers)
		}
		checkOneTraceEach(t, &rec, 1000)
	}
}

// Items that share a trace (the results of one FlatMap call) keep it
// through a Batch and Unbatch, whatever batch they land in.
func TestItemsThatShareATraceKeepItThroughBatchAndUnbatch(t *testing.T) {
	const n = 300
	var tr linkTracer
	var rec traces
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	three := sluice.FlatMap(p, "three", mark(p, &tr, &rec, t, "mark", sluice.FromSlice(p, "in", seq(n)), 2), 2, func(_ context.Context, v int, emit func(int) bool) error {
		emit(3 * v)
		emit(3*v + 1)
		emit(3*v + 2)
		return nil
	})
	items := sluice.Unbatch(p, "unbatch", sluice.Batch(p, "batch", three, 4, 0))
	sluice.ForEach(p, "store", items, 2, func(ctx context.Context, v int) error {
		rec.saw(v/3, tr.root(t, ctx))
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	for item := range n {
		if got := len(rec.roots[item]); got != 4 {
			rec.mu.Unlock()
			t.Fatalf("item %d: got %d spans, want 4 (mark, and store for each of its 3 results)", item, got)
		}
	}
	rec.mu.Unlock()
	checkOneTraceEach(t, &rec, n)
}
