package otelx_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/otelx"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// An item that comes from no broker (a plain int from From) is one trace
// across its stages: the source's span begins it, and the spans of the
// Map and of the sink on the item and on what it became are its children.
func TestAnItemWithoutAMessageIsOneTraceFromItsSourceToItsSink(t *testing.T) {
	const n = 50
	tp, exp := provider(t, sdktrace.AlwaysSample())
	p := sluice.New(context.Background(), sluice.Tracing(otelx.NewTracer(tp)))
	src := sluice.From(p, "gen", func(_ context.Context, out *sluice.Emitter[int]) error {
		for i := range n {
			if !out.Send(i) {
				return nil
			}
		}
		return nil
	})
	doubled := sluice.Map(p, "double", src, 3, func(_ context.Context, v int) (int, error) { return 2 * v, nil })
	sluice.ForEach(p, "store", doubled, 2, func(context.Context, int) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	byTrace := map[trace.TraceID]map[string]sdktrace.ReadOnlySpan{} // stage → span, per trace
	spans := exp.GetSpans().Snapshots()
	for _, s := range spans {
		tid := s.SpanContext().TraceID()
		if byTrace[tid] == nil {
			byTrace[tid] = map[string]sdktrace.ReadOnlySpan{}
		}
		stage := attrsOf(s)[otelx.StageKey].AsString()
		if _, dup := byTrace[tid][stage]; dup {
			t.Fatalf("trace %v has two spans of stage %s: want one per stage per item", tid, stage)
		}
		byTrace[tid][stage] = s
	}
	if len(byTrace) != n || len(spans) != 3*n {
		t.Fatalf("got %d spans in %d traces, want %d traces (one per item) of 3 spans", len(spans), len(byTrace), n)
	}
	for tid, st := range byTrace {
		gen, double, store := st["gen"], st["double"], st["store"]
		if gen == nil || double == nil || store == nil {
			t.Fatalf("trace %v: got stages %v, want gen, double and store", tid, st)
		}
		if gen.Parent().IsValid() {
			t.Fatalf("trace %v: the source's span has parent %v, want it to begin the trace", tid, gen.Parent())
		}
		root := gen.SpanContext().SpanID()
		if double.Parent().SpanID() != root || store.Parent().SpanID() != root {
			t.Fatalf("trace %v: double's and store's spans are not children of the source's", tid)
		}
		if gen.SpanKind() != trace.SpanKindInternal || double.SpanKind() != trace.SpanKindInternal {
			t.Fatalf("trace %v: got kinds %v, %v; want Internal spans: no broker is involved", tid, gen.SpanKind(), double.SpanKind())
		}
	}
}
