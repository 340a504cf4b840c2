package sluice_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// The trace of the items a Keyed stage's Control and a Window's late
// stream hand on, in linkTracer's terms (trace_follow_test.go).

// What Control emits for a control item, on every worker, continues that
// item's trace.
func TestWhatControlEmitsContinuesTheControlItemsTrace(t *testing.T) {
	const n, workers = 1000, 3
	var tr linkTracer
	var rec traces
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	src := mark(p, &tr, &rec, t, "mark", sluice.FromSlice(p, "in", seq(n)), 2)
	isControl := func(v int) bool { return v%100 == 99 }
	outs := sluice.Keyed(p, "sum", src, workers, sluice.KeyFuncs[int, int, int, int]{
		Key: func(v int) int { return v % 17 },
		Item: func(_ context.Context, _ int, sum *int, v int, emit func(int) bool) error {
			*sum += v
			emit(v)
			return nil
		},
		IsControl: isControl,
		Control: func(_ context.Context, v int, _ iter.Seq2[int, *int], emit func(int) bool) error {
			emit(v) // once per worker
			return nil
		},
	})
	store(p, &tr, &rec, t, "store", outs, 2)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkOneTraceEach(t, &rec, n)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for v := range n {
		if want := map[bool]int{true: 1 + workers, false: 2}[isControl(v)]; len(rec.roots[v]) != want {
			t.Fatalf("item %d: %d spans, want %d (its mark, and its store once per emission)", v, len(rec.roots[v]), want)
		}
	}
}

// An item too late for its window reaches the late stream in its own
// trace.
func TestALateItemKeepsItsTraceOnTheLateStream(t *testing.T) {
	const n = 1000
	var tr linkTracer
	var rec traces
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	src := mark(p, &tr, &rec, t, "mark", sluice.FromSlice(p, "in", seq(n)), 1)
	late := func(v int) bool { return v > 100 && v%50 == 0 }
	var lateItems sluice.Stream[sluice.Late[int]]
	panes := sluice.Window(p, "win", src, 2, sluice.WindowSpec[int, int, int]{
		Windows: sluice.Tumbling(10 * time.Millisecond),
		Key:     func(v int) int { return v % 3 },
		Time: func(v int) time.Time {
			if late(v) {
				return time.Unix(0, 0) // its window ended long before
			}
			return time.Unix(0, int64(v)*int64(time.Millisecond))
		},
		Fold: func(sum *int, v int) { *sum += v },
		Late: &lateItems,
	})
	sluice.ForEach(p, "panes", panes, 1, func(context.Context, sluice.Pane[int, int]) error { return nil })
	sluice.ForEach(p, "late", lateItems, 2, func(ctx context.Context, l sluice.Late[int]) error {
		rec.saw(l.Item, tr.root(t, ctx))
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkOneTraceEach(t, &rec, n)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for v := range n {
		if want := map[bool]int{true: 2, false: 1}[late(v)]; len(rec.roots[v]) != want {
			t.Fatalf("item %d: %d spans, want %d", v, len(rec.roots[v]), want)
		}
	}
}
