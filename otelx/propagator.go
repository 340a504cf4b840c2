package otelx

import (
	"context"

	"github.com/sluicehq/sluice"
	"go.opentelemetry.io/otel/propagation"
)

// Propagator returns a [sluice.Propagator] that reads and writes trace
// context with p: connectors take it to extract the trace context of the
// messages they read and inject it into the messages they write. It
// panics if p is nil; pass otel.GetTextMapPropagator() for the global one.
// It adds no cost to p's.
func Propagator(p propagation.TextMapPropagator) sluice.Propagator {
	if p == nil {
		panic("otelx: Propagator called with a nil TextMapPropagator; pass otel.GetTextMapPropagator() for the global one")
	}
	return propagator{p}
}

// W3C returns the propagator of the W3C recommendations: the traceparent
// and tracestate headers (Trace Context) and the baggage header (Baggage),
// what OpenTelemetry's SDKs send by default.
func W3C() sluice.Propagator {
	return Propagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
}

// propagator adapts a TextMapPropagator: sluice.Headers has the method set
// of propagation.TextMapCarrier, so a Headers is a carrier as it is.
type propagator struct{ p propagation.TextMapPropagator }

func (p propagator) Extract(ctx context.Context, h sluice.Headers) context.Context {
	return p.p.Extract(ctx, h)
}

func (p propagator) Inject(ctx context.Context, h sluice.Headers) { p.p.Inject(ctx, h) }
