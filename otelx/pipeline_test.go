package otelx_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/otelx"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

type msg struct {
	sluice.Receipt
	n int
}

type nopSettler struct{}

func (nopSettler) Settle(uint64, error) {}

// TestAPipelineTracesEachItemInItsMessagesTrace runs messages with trace
// contexts through a Map, a Batch and a sink: each message's trace holds
// a span of the Map for it and one of the batch insert that stored it,
// and the insert's own span links every message.
func TestAPipelineTracesEachItemInItsMessagesTrace(t *testing.T) {
	tp, exp := provider(t, sdktrace.AlwaysSample())
	const n = 6
	msgs := make([]msg, n)
	for i := range msgs {
		msgs[i] = msg{sluice.NewReceipt(nopSettler{}, uint64(i)).WithTrace(remote(t, byte(i+1), true)), i}
	}
	p := sluice.New(context.Background(), sluice.Tracing(otelx.NewTracer(tp)))
	dec := sluice.Map(p, "decode", sluice.FromSlice(p, "src", msgs), 2, func(_ context.Context, m msg) (msg, error) { return m, nil })
	b := sluice.Batch(p, "collect", dec, n, 0)
	sluice.ForEach(p, "insert", b, 1, func(context.Context, []msg) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	perTrace := map[trace.TraceID][]string{}
	var batchLinks int
	for _, s := range exp.GetSpans() {
		if !s.Parent.IsValid() {
			batchLinks = len(s.Links)
			continue
		}
		perTrace[s.SpanContext.TraceID()] = append(perTrace[s.SpanContext.TraceID()], s.Name)
	}
	for i := range msgs {
		id := trace.SpanContextFromContext(remote(t, byte(i+1), true)).TraceID()
		if got := perTrace[id]; len(got) != 2 {
			t.Errorf("message %d: got spans %v in its trace, want decode's and insert's", i, got)
		}
	}
	if batchLinks != n {
		t.Errorf("got the insert's span with %d links, want %d", batchLinks, n)
	}
}

// TestAPipelineWithoutTheTracingOptionStartsNoSpan checks the default.
func TestAPipelineWithoutTheTracingOptionStartsNoSpan(t *testing.T) {
	_, exp := provider(t, sdktrace.AlwaysSample())
	p := sluice.New(context.Background())
	sluice.ForEach(p, "sink", sluice.FromSlice(p, "src", []int{1, 2}), 1, func(context.Context, int) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := len(exp.GetSpans()); got != 0 {
		t.Fatalf("got %d spans, want none", got)
	}
}
