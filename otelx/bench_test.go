package otelx_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/otelx"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkTracer measures the cost of one call's span: Start and end, as
// the core pays it per item and stage. Recorded spans go to a processor
// that exports to nowhere, so the figure is the SDK's and otelx's work,
// not an exporter's. "root" calls have no parent (the sampler decides per
// call), "message" calls a remote parent (a message from a broker);
// "plain" is the baseline: the same loop around a no-op end function.
func BenchmarkTracer(b *testing.B) {
	call := sluice.Call{Pipeline: "orders", Stage: "price", Kind: "map", Items: 1}
	b.Run("plain", func(b *testing.B) {
		var end func(error) = func(error) {}
		ctx := context.Background()
		for b.Loop() {
			_ = ctx
			end(nil)
		}
	})
	b.Run("noop-provider", func(b *testing.B) {
		tr := otelx.NewTracer(noop.NewTracerProvider())
		for b.Loop() {
			_, end := tr.Start(context.Background(), call)
			end(nil)
		}
	})
	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler
		parent  context.Context
	}{
		{"root/sampled=0%", sdktrace.TraceIDRatioBased(0), context.Background()},
		{"root/sampled=1%", sdktrace.TraceIDRatioBased(0.01), context.Background()},
		{"root/sampled=100%", sdktrace.TraceIDRatioBased(1), context.Background()},
		{"message/not-sampled", sdktrace.ParentBased(sdktrace.AlwaysSample()), remote(b, 1, false)},
		{"message/sampled", sdktrace.ParentBased(sdktrace.NeverSample()), remote(b, 1, true)},
	} {
		b.Run(c.name, func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(c.sampler),
				sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(tracetest.NewNoopExporter())))
			defer tp.Shutdown(context.Background())
			tr := otelx.NewTracer(tp)
			b.ReportAllocs()
			for b.Loop() {
				_, end := tr.Start(c.parent, call)
				end(nil)
			}
		})
	}
}
