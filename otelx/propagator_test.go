package otelx_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/otelx"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// headers is a message's headers as a connector would present them.
type headers map[string]string

func (h headers) Get(k string) string { return h[k] }
func (h headers) Set(k, v string)     { h[k] = v }
func (h headers) Keys() []string      { return slices.Sorted(maps.Keys(h)) }

var _ sluice.Headers = headers(nil)

// A producer's span context and baggage survive the trip through a
// message's headers, and the consumer's span continues the producer's trace.
func TestW3CCarriesTraceContextAndBaggageThroughHeaders(t *testing.T) {
	tp, exp := provider(t, sdktrace.ParentBased(sdktrace.AlwaysSample()))
	member, err := baggage.NewMember("tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	bag, err := baggage.New(member)
	if err != nil {
		t.Fatal(err)
	}
	ctx, produce := tp.Tracer("producer").Start(baggage.ContextWithBaggage(context.Background(), bag), "orders send",
		trace.WithSpanKind(trace.SpanKindProducer))
	h := headers{"content-type": "application/json"}
	otelx.W3C().Inject(ctx, h)
	produce.End()
	sent := trace.SpanContextFromContext(ctx)
	if want := fmt.Sprintf("00-%s-%s-01", sent.TraceID(), sent.SpanID()); h["traceparent"] != want || h["baggage"] != "tenant=acme" {
		t.Fatalf("got headers %v, want traceparent %s and baggage tenant=acme", h, want)
	}

	got := otelx.W3C().Extract(context.Background(), h)
	sc := trace.SpanContextFromContext(got)
	if !sc.IsRemote() || sc.TraceID() != sent.TraceID() || sc.SpanID() != sent.SpanID() || !sc.IsSampled() {
		t.Fatalf("extracted %v, want the producer's span context %v, remote and sampled", sc, sent)
	}
	if v := baggage.FromContext(got).Member("tenant").Value(); v != "acme" {
		t.Fatalf("extracted baggage tenant=%q, want acme", v)
	}

	_, end := otelx.NewTracer(tp).Start(got, sluice.Call{Pipeline: "p", Stage: "decode", Kind: "map", Items: 1})
	end(nil)
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want the producer's and the consumer's", len(spans))
	}
	consume := spans[1]
	if consume.SpanContext.TraceID() != sent.TraceID() || consume.Parent.SpanID() != sent.SpanID() {
		t.Fatalf("got the consumer's span in trace %v under %v, want trace %v under the producer's span %v",
			consume.SpanContext.TraceID(), consume.Parent.SpanID(), sent.TraceID(), sent.SpanID())
	}
}

// Propagator uses exactly the propagator it is given.
func TestPropagatorAdaptsTheGivenPropagator(t *testing.T) {
	ctx := remote(t, 7, true)
	member, _ := baggage.NewMember("k", "v")
	bag, _ := baggage.New(member)
	ctx = baggage.ContextWithBaggage(ctx, bag)

	h := headers{}
	otelx.Propagator(propagation.TraceContext{}).Inject(ctx, h)
	if got := h.Keys(); !slices.Equal(got, []string{"traceparent"}) {
		t.Fatalf("TraceContext alone wrote headers %v, want only traceparent", h)
	}
	h = headers{}
	otelx.Propagator(propagation.Baggage{}).Inject(ctx, h)
	if got := h.Keys(); !slices.Equal(got, []string{"baggage"}) {
		t.Fatalf("Baggage alone wrote headers %v, want only baggage", h)
	}
	if sc := trace.SpanContextFromContext(otelx.Propagator(propagation.Baggage{}).Extract(context.Background(), h)); sc.IsValid() {
		t.Fatalf("Baggage alone extracted a span context %v, want none", sc)
	}
}

// Headers without trace context leave the context as it was.
func TestExtractWithoutTraceContextKeepsTheContext(t *testing.T) {
	ctx := otelx.W3C().Extract(context.Background(), headers{"key": "value"})
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		t.Fatalf("extracted %v from headers without traceparent, want no span context", sc)
	}
	h := headers{"traceparent": "00-zz-not-hex-01"}
	if sc := trace.SpanContextFromContext(otelx.W3C().Extract(context.Background(), h)); sc.IsValid() {
		t.Fatalf("extracted %v from a malformed traceparent, want no span context", sc)
	}
}

func TestPropagatorPanicsOnNil(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "otelx: Propagator") {
			t.Fatalf("got panic %v, want one naming otelx: Propagator", r)
		}
	}()
	otelx.Propagator(nil)
}
