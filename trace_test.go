package sluice_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/sluicehq/sluice"
)

// spanKey holds, in a span's context, the span's number.
type spanKey struct{}

// span is what recTracer keeps of a span.
type span struct {
	id, parent int // parent 0: a root
	call       sluice.Call
	attempts   int
	err        error
}

// recTracer records every span: its number, its parent's (from the
// call's Parent, or the context), its call and, at its end, its attempts.
type recTracer struct {
	mu    sync.Mutex
	spans []*span
}

func (t *recTracer) Start(ctx context.Context, c sluice.Call) (context.Context, func(error)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sp := &span{id: len(t.spans) + 1, call: c}
	if c.Parent != nil {
		sp.parent, _ = c.Parent.Value(spanKey{}).(int)
	}
	sp.call.Parent, sp.call.Links = nil, nil
	t.spans = append(t.spans, sp)
	return context.WithValue(ctx, spanKey{}, sp.id), func(err error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		sp.err = err
		if c.Attempts != nil {
			sp.attempts = c.Attempts()
		}
	}
}

func (t *recTracer) byStage(stage string) []*span {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*span
	for _, s := range t.spans {
		if s.call.Stage == stage {
			out = append(out, s)
		}
	}
	return out
}

// describer is a Settler that describes its messages.
type describer struct{}

func (describer) Settle(uint64, error) {}
func (describer) Describe(key uint64) (sluice.Message, bool) {
	return sluice.Message{System: "test", Destination: "orders", ID: string(rune('a' + key))}, true
}

type order struct {
	sluice.Receipt
	n int
}

func TestASourceStartsOneTracePerItemThatItsStagesContinue(t *testing.T) {
	var tr recTracer
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	in := make([]order, 20)
	for i := range in {
		in[i] = order{sluice.NewReceipt(describer{}, uint64(i)), i}
	}
	up := sluice.Map(p, "price", sluice.FromSlice(p, "read", in), 3, func(_ context.Context, o order) (order, error) { return o, nil })
	sluice.ForEach(p, "store", up, 2, func(context.Context, order) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	roots := map[int]string{} // source span → its message's ID
	for _, s := range tr.byStage("read") {
		if s.parent != 0 || s.call.Kind != "source" || s.call.Message.System != "test" || s.call.Attempts != nil {
			t.Fatalf("got source span %+v, want a root of kind source describing its message", s)
		}
		roots[s.id] = s.call.Message.ID
	}
	if len(roots) != len(in) {
		t.Fatalf("got %d source spans, want one per item: %d", len(roots), len(in))
	}
	for _, stage := range []string{"price", "store"} {
		spans := tr.byStage(stage)
		if len(spans) != len(in) {
			t.Fatalf("%s: got %d spans, want %d", stage, len(spans), len(in))
		}
		seen := map[int]bool{}
		for _, s := range spans {
			id, ok := roots[s.parent]
			if !ok || seen[s.parent] {
				t.Fatalf("%s: span %+v has parent %d, want the source span of its item, once", stage, s, s.parent)
			}
			seen[s.parent] = true
			if s.call.Message.ID != id || s.call.Message.Destination != "orders" {
				t.Fatalf("%s: got message %+v, want the item's own (ID %q)", stage, s.call.Message, id)
			}
		}
	}
}

func TestAnItemWithATraceGetsNoSourceSpan(t *testing.T) {
	var tr recTracer
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	trace := context.WithValue(context.Background(), spanKey{}, 99)
	in := []order{{sluice.NewReceipt(describer{}, 1).WithTrace(trace), 1}}
	sluice.ForEach(p, "store", sluice.FromSlice(p, "read", in), 1, func(context.Context, order) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := tr.byStage("read"); len(got) != 0 {
		t.Fatalf("got %d source spans, want none: the item's message has its trace", len(got))
	}
	if got := tr.byStage("store"); len(got) != 1 || got[0].parent != 99 {
		t.Fatalf("got %+v, want one span, a child of the message's trace", got)
	}
}

func TestARetriedCallsSpanSaysItsAttempts(t *testing.T) {
	var tr recTracer
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	var mu sync.Mutex
	calls := map[int]int{}
	sluice.ForEach(p, "store", sluice.FromSlice(p, "in", []int{0, 1, 2, 3}), 2, func(_ context.Context, v int) error {
		mu.Lock()
		defer mu.Unlock()
		calls[v]++
		if calls[v] <= v { // item v fails v times
			return errors.New("busy")
		}
		return nil
	}, sluice.Retry(5, 0, 0))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	spans := tr.byStage("store")
	if len(spans) != 4 {
		t.Fatalf("got %d spans, want 4", len(spans))
	}
	got := map[int]bool{}
	for _, s := range spans {
		if s.err != nil {
			t.Fatalf("span %+v ended with an error, want none", s)
		}
		got[s.attempts] = true
	}
	for n := 1; n <= 4; n++ {
		if !got[n] {
			t.Fatalf("got attempts %v over the spans, want 1, 2, 3 and 4", got)
		}
	}
}

// dropSources is a tracer that starts nothing at a source (it returns the
// context it was given) and records the Parent of every other call.
type dropSources struct {
	mu      sync.Mutex
	parents []context.Context
}

func (t *dropSources) Start(ctx context.Context, c sluice.Call) (context.Context, func(error)) {
	if c.Kind != "source" {
		t.mu.Lock()
		t.parents = append(t.parents, c.Parent)
		t.mu.Unlock()
	}
	return ctx, func(error) {}
}

// A tracer that starts no trace at the source leaves the items without
// one: the calls after see no Parent, as if no source had asked (a parent
// that carries nothing would make a sampler take them for traced).
func TestASourceSpanTheTracerDidNotStartIsNotAttached(t *testing.T) {
	var tr dropSources
	p := sluice.New(context.Background(), sluice.Tracing(&tr))
	in := make([]order, 10)
	for i := range in {
		in[i] = order{sluice.NewReceipt(describer{}, uint64(i)), i}
	}
	sluice.ForEach(p, "store", sluice.FromSlice(p, "read", in), 2, func(context.Context, order) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(tr.parents) != len(in) {
		t.Fatalf("got %d calls, want %d", len(tr.parents), len(in))
	}
	for i, parent := range tr.parents {
		if parent != nil {
			t.Fatalf("call %d: got Parent %v, want nil: the source started no trace", i, parent)
		}
	}
}
