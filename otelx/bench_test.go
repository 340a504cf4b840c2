package otelx_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/otelx"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkTracer measures the cost of one call's span: Start and end, as
// the core pays it per item and stage. Recorded spans go to a processor
// that exports to nowhere, so the figure is the SDK's and otelx's work,
// not an exporter's. "root" calls have no parent (the sampler decides per
// call), "message" calls a remote parent (a message from a broker). The
// baseline, "noop-provider", is the API's no-op TracerProvider.
func BenchmarkTracer(b *testing.B) {
	call := sluice.Call{Pipeline: "orders", Stage: "price", Kind: "map", Items: 1}
	b.Run("noop-provider", func(b *testing.B) {
		tr := otelx.NewTracer(noop.NewTracerProvider())
		b.ReportAllocs()
		for b.Loop() {
			_, end := tr.Start(context.Background(), call)
			end(nil)
		}
	})
	for _, c := range []struct {
		name    string
		sampler sdktrace.Sampler
		parent  context.Context
		opts    []otelx.Option
	}{
		{"root/sampled=0%", sdktrace.TraceIDRatioBased(0), context.Background(), nil},
		{"root/sampled=1%", sdktrace.TraceIDRatioBased(0.01), context.Background(), nil},
		{"root/sampled=100%", sdktrace.TraceIDRatioBased(1), context.Background(), nil},
		{"message/not-sampled", sdktrace.ParentBased(sdktrace.AlwaysSample()), remote(b, 1, false), nil},
		{"message/not-sampled/parent-sampling", sdktrace.ParentBased(sdktrace.AlwaysSample()), remote(b, 1, false),
			[]otelx.Option{otelx.WithParentSampling()}},
		{"message/sampled", sdktrace.ParentBased(sdktrace.NeverSample()), remote(b, 1, true), nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(c.sampler),
				sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(tracetest.NewNoopExporter())))
			defer tp.Shutdown(context.Background())
			tr := otelx.NewTracer(tp, c.opts...)
			b.ReportAllocs()
			for b.Loop() {
				_, end := tr.Start(c.parent, call)
				end(nil)
			}
		})
	}
}

// BenchmarkMetricsCollect measures one collection of a finished pipeline
// of 4 stages by an SDK ManualReader: the Stats reads, the observations
// and the aggregation, per collection and per stage.
func BenchmarkMetricsCollect(b *testing.B) {
	p := orders(b, "orders", 100_000)
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	m, err := otelx.NewMetrics(mp, p)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	var rm metricdata.ResourceMetrics
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Collect(context.Background(), &rm); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/4, "ns/stage")
}
