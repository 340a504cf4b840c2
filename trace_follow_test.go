package sluice_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/sluicehq/sluice"
)

// linkTracer records spans as recTracer does, with the spans each one
// links, so that a test can follow every span up to its trace's root.
type linkTracer struct {
	mu    sync.Mutex
	spans map[int]*lspan
}

type lspan struct {
	parent int // 0: a root (or a parent this tracer did not make)
	links  []int
	call   sluice.Call
}

func (t *linkTracer) Start(ctx context.Context, c sluice.Call) (context.Context, func(error)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.spans == nil {
		t.spans = map[int]*lspan{}
	}
	sp := &lspan{call: c}
	if c.Parent != nil {
		sp.parent, _ = c.Parent.Value(spanKey{}).(int)
	}
	for _, l := range c.Links {
		id, _ := l.Value(spanKey{}).(int)
		sp.links = append(sp.links, id)
	}
	sp.call.Parent, sp.call.Links = nil, nil
	id := len(t.spans) + 1
	t.spans[id] = sp
	return context.WithValue(ctx, spanKey{}, id), func(error) {}
}

// root returns the root of the trace of the span whose context ctx is:
// the span of the source that began the item's trace.
func (t *linkTracer) root(tb testing.TB, ctx context.Context) int {
	tb.Helper()
	id, ok := ctx.Value(spanKey{}).(int)
	if !ok {
		tb.Fatal("a call's context holds no span")
	}
	return t.rootOf(tb, id)
}

func (t *linkTracer) rootOf(tb testing.TB, id int) int {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		sp := t.spans[id]
		if sp.parent == 0 {
			if sp.call.Kind != "source" {
				tb.Fatalf("span %d (%s %q) is a root: want every span in the trace its item's source began", id, sp.call.Kind, sp.call.Stage)
			}
			return id
		}
		id = sp.parent
	}
}

// links returns the roots of the traces the span of ctx links.
func (t *linkTracer) links(tb testing.TB, ctx context.Context) []int {
	tb.Helper()
	id := ctx.Value(spanKey{}).(int)
	t.mu.Lock()
	ls := slices.Clone(t.spans[id].links)
	t.mu.Unlock()
	for i, l := range ls {
		ls[i] = t.rootOf(tb, l)
	}
	slices.Sort(ls)
	return ls
}

// traces records, for each item (by the number it began as), the root
// of the trace of every span that handled it or what it became.
type traces struct {
	mu    sync.Mutex
	roots map[int][]int
}

func (r *traces) saw(item, root int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.roots == nil {
		r.roots = map[int][]int{}
	}
	r.roots[item] = append(r.roots[item], root)
}

// errSkip is the error of a call that a test skips or dead-letters.
var errSkip = errors.New("skip")

func seq(n int) []int {
	xs := make([]int, n)
	for i := range xs {
		xs[i] = i
	}
	return xs
}

// An item with no receipt gets its trace from its source, and every
// stage's span on it and on what it becomes is in that trace.
func TestAnItemWithoutAReceiptHasOneTraceThroughMapFilterFlatMapForEach(t *testing.T) {
	const n = 200
	var tr linkTracer
	var rec traces
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	m := sluice.Map(p, "ten", sluice.FromSlice(p, "in", seq(n)), 3, func(ctx context.Context, v int) (int, error) {
		rec.saw(v, tr.root(t, ctx))
		return v * 10, nil
	})
	f := sluice.Filter(p, "even", m, 2, func(ctx context.Context, v int) (bool, error) {
		rec.saw(v/10, tr.root(t, ctx))
		return v%20 == 0, nil
	})
	fm := sluice.FlatMap(p, "two", f, 2, func(ctx context.Context, v int, emit func(int) bool) error {
		rec.saw(v/10, tr.root(t, ctx))
		emit(v)
		emit(v + 1)
		return nil
	})
	sluice.ForEach(p, "store", fm, 2, func(ctx context.Context, v int) error {
		rec.saw(v/10, tr.root(t, ctx))
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	for item := range n {
		want := 2 // ten, even
		if item%2 == 0 {
			want = 5 // and two, and store twice
		}
		if got := len(rec.roots[item]); got != want {
			rec.mu.Unlock()
			t.Fatalf("item %d: got %d spans, want %d", item, got, want)
		}
	}
	rec.mu.Unlock()
	checkOneTraceEach(t, &rec, n)
}

// checkOneTraceEach checks that every span of each of items 0..n-1 is
// in one trace, one per item, and returns each item's.
func checkOneTraceEach(t *testing.T, rec *traces, n int) map[int]int {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	byRoot := map[int]int{}
	rootOf := map[int]int{}
	for item := range n {
		roots := rec.roots[item]
		if len(roots) == 0 {
			t.Fatalf("item %d: no span", item)
		}
		for _, root := range roots {
			if root != roots[0] {
				t.Fatalf("item %d: got spans in traces %v, want one trace", item, roots)
			}
		}
		if other, ok := byRoot[roots[0]]; ok {
			t.Fatalf("items %d and %d share trace %d, want one each", other, item, roots[0])
		}
		byRoot[roots[0]] = item
		rootOf[item] = roots[0]
	}
	return rootOf
}

// mark is a Map stage that records, for each item, the trace its span is
// in: the trace every later span on the item must be in too.
func mark(p *sluice.Pipeline, tr *linkTracer, rec *traces, t *testing.T, name string, in sluice.Stream[int], n int) sluice.Stream[int] {
	return sluice.Map(p, name, in, n, func(ctx context.Context, v int) (int, error) {
		rec.saw(v, tr.root(t, ctx))
		return v, nil
	})
}

// store is a ForEach that records the trace of its span on each item.
func store(p *sluice.Pipeline, tr *linkTracer, rec *traces, t *testing.T, name string, in sluice.Stream[int], n int) {
	sluice.ForEach(p, name, in, n, func(ctx context.Context, v int) error {
		rec.saw(v, tr.root(t, ctx))
		return nil
	})
}

func TestTheTraceFollowsAnItemThroughBroadcast(t *testing.T) {
	const n = 300
	var tr linkTracer
	var rec traces
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	outs := sluice.Broadcast(p, "copy", mark(p, &tr, &rec, t, "mark", sluice.FromSlice(p, "in", seq(n)), 2), 3)
	for i, o := range outs {
		store(p, &tr, &rec, t, "store"+string(rune('a'+i)), o, 2)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkOneTraceEach(t, &rec, n)
}

func TestTheTraceFollowsAnItemThroughPartitionAndMerge(t *testing.T) {
	const n = 300
	var tr linkTracer
	var rec traces
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	a := mark(p, &tr, &rec, t, "mark-a", sluice.FromSlice(p, "a", seq(n/2)), 1)
	b := mark(p, &tr, &rec, t, "mark-b", sluice.FromSlice(p, "b", seq(n)[n/2:]), 1)
	parts := sluice.Partition(p, "split", sluice.Merge(p, "merge", []sluice.Stream[int]{a, b}), 2, func(v int) int { return v % 7 })
	m := sluice.Merge(p, "join", parts)
	store(p, &tr, &rec, t, "store", m, 3)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkOneTraceEach(t, &rec, n)
}

func TestTheTraceFollowsAnItemThroughOrderedMap(t *testing.T) {
	const n = 1000
	var tr linkTracer
	var rec traces
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	src := mark(p, &tr, &rec, t, "mark", sluice.FromSlice(p, "in", seq(n)), 2)
	om := sluice.OrderedMap(p, "ordered", src, 4, func(ctx context.Context, v int) (int, error) {
		rec.saw(v, tr.root(t, ctx))
		if v%3 == 0 {
			return 0, errSkip
		}
		return v, nil
	}, sluice.SkipErrors())
	store(p, &tr, &rec, t, "store", om, 2)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkOneTraceEach(t, &rec, n)
}

// A dead letter is in the trace of the item that failed.
func TestADeadLetterIsInItsItemsTrace(t *testing.T) {
	const n = 100
	var tr linkTracer
	var rec traces
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	var dead sluice.Stream[sluice.Failed[int]]
	ok := sluice.Map(p, "odd", mark(p, &tr, &rec, t, "mark", sluice.FromSlice(p, "in", seq(n)), 1), 2, func(ctx context.Context, v int) (int, error) {
		if v%2 == 0 {
			return 0, errSkip
		}
		return v, nil
	}, sluice.DeadLetter(&dead))
	store(p, &tr, &rec, t, "store", ok, 1)
	sluice.ForEach(p, "park", dead, 1, func(ctx context.Context, f sluice.Failed[int]) error {
		rec.saw(f.Item, tr.root(t, ctx))
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkOneTraceEach(t, &rec, n)
}
