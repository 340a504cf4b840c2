package otelx_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/otelx"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Turn traces and metrics on for a pipeline. A service makes its providers
// with OTLP exporters; here they keep what they get in memory, and the
// example reads the metrics back.
func Example() {
	ctx := context.Background()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	defer tp.Shutdown(ctx)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)

	p := sluice.New(ctx, sluice.Named("words"), sluice.Tracing(otelx.NewTracer(tp)))
	m, err := otelx.NewMetrics(mp, p)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	src := sluice.FromSlice(p, "words", []string{"a", "bb", "ccc", "dddd"})
	long := sluice.Filter(p, "long", src, 1, func(_ context.Context, s string) (bool, error) { return len(s) > 1, nil })
	sluice.Collect(p, "keep", long)
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		fmt.Println(err)
		return
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Name != "sluice.stage.items" {
				continue
			}
			lines := map[string]int64{}
			for _, dp := range mt.Data.(metricdata.Sum[int64]).DataPoints {
				stage, _ := dp.Attributes.Value(otelx.StageKey)
				dir, _ := dp.Attributes.Value("sluice.direction")
				lines[fmt.Sprintf("%s %s %s", mt.Name, stage.AsString(), dir.AsString())] = dp.Value
			}
			for _, l := range slices.Sorted(maps.Keys(lines)) {
				fmt.Println(l, lines[l])
			}
		}
	}
	// Output:
	// sluice.stage.items keep in 3
	// sluice.stage.items keep out 0
	// sluice.stage.items long in 4
	// sluice.stage.items long out 3
	// sluice.stage.items words in 0
	// sluice.stage.items words out 4
}

// The span of one call, as the pipeline starts and ends it around a
// stage's function, of an item whose message carried a trace context.
func ExampleNewTracer() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	tracer := otelx.NewTracer(tp)

	msg := otelx.W3C().Extract(context.Background(),
		headers{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	ctx, end := tracer.Start(msg, sluice.Call{Pipeline: "orders", Stage: "decode", Kind: "map", Items: 1})
	fmt.Println("the function runs in trace", trace.SpanContextFromContext(ctx).TraceID())
	end(nil)

	s := exp.GetSpans()[0]
	fmt.Println(s.Name, s.SpanKind, "under", s.Parent.SpanID())
	for _, kv := range s.Attributes {
		fmt.Println(kv.Key, kv.Value.Emit())
	}
	// Output:
	// the function runs in trace 4bf92f3577b34da6a3ce929d0e0e4736
	// decode map consumer under 00f067aa0ba902b7
	// sluice.pipeline orders
	// sluice.stage decode
	// sluice.stage.kind map
	// sluice.items 1
	// messaging.operation.type process
}

// A connector's sink writes the trace context of what it sends into the
// message's headers; its source reads it back from what it receives.
func ExampleW3C() {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 15: 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 7: 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	h := headers{}
	otelx.W3C().Inject(trace.ContextWithSpanContext(context.Background(), sc), h)
	fmt.Println("traceparent:", h["traceparent"])

	got := trace.SpanContextFromContext(otelx.W3C().Extract(context.Background(), h))
	fmt.Println("read back:", got.TraceID(), got.SpanID(), "remote:", got.IsRemote())
	// Output:
	// traceparent: 00-4bf90000000000000000000000000036-00f00000000000b7-01
	// read back: 4bf90000000000000000000000000036 00f00000000000b7 remote: true
}

// Any OpenTelemetry propagator serves: here the W3C trace context alone,
// which leaves the baggage out.
func ExamplePropagator() {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 15: 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 7: 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	member, _ := baggage.NewMember("tenant", "acme")
	bag, _ := baggage.New(member)
	ctx = baggage.ContextWithBaggage(ctx, bag)

	h := headers{}
	otelx.Propagator(propagation.TraceContext{}).Inject(ctx, h)
	fmt.Println(h)
	// Output:
	// map[traceparent:00-4bf90000000000000000000000000036-00f00000000000b7-01]
}

// Attributes that every span of a pipeline shares, such as the messaging
// system and topic it consumes, are given once.
func ExampleWithAttributes() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	tracer := otelx.NewTracer(tp, otelx.WithAttributes(
		attribute.String("messaging.system", "kafka"),
		attribute.String("messaging.destination.name", "orders")))

	_, end := tracer.Start(context.Background(), sluice.Call{Pipeline: "orders", Stage: "decode", Kind: "map", Items: 1})
	end(nil)
	for _, kv := range exp.GetSpans()[0].Attributes {
		if strings.HasPrefix(string(kv.Key), "messaging.") {
			fmt.Println(kv.Key, kv.Value.Emit())
		}
	}
	// Output:
	// messaging.system kafka
	// messaging.destination.name orders
}

// A Metrics can follow pipelines that start and finish while it is
// registered: add each run, and remove it once it has been collected.
func ExampleMetrics_Add() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	m, err := otelx.NewMetrics(mp)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	for run := range 3 {
		p := sluice.New(ctx, sluice.Named("nightly"))
		sluice.Collect(p, "all", sluice.FromSlice(p, "items", make([]int, run+1)))
		m.Add(p)
		if err := p.Wait(); err != nil {
			fmt.Println(err)
		}
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(ctx, &rm); err != nil {
			fmt.Println(err)
		}
		for _, mt := range rm.ScopeMetrics[0].Metrics {
			if mt.Name != "sluice.stage.items" {
				continue
			}
			for _, dp := range mt.Data.(metricdata.Sum[int64]).DataPoints {
				stage, _ := dp.Attributes.Value(otelx.StageKey)
				dir, _ := dp.Attributes.Value("sluice.direction")
				if stage.AsString() == "items" && dir.AsString() == "out" {
					fmt.Println("run", run, "items out of the source:", dp.Value)
				}
			}
		}
		m.Remove(p) // the next run reuses the name
	}
	// Output:
	// run 0 items out of the source: 1
	// run 1 items out of the source: 2
	// run 2 items out of the source: 3
}
