package otelx_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/otelx"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// provider returns an SDK TracerProvider with sampler s that exports its
// spans, synchronously, to the returned in-memory exporter.
func provider(t testing.TB, s sdktrace.Sampler) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(s), sdktrace.WithSyncer(exp))
	t.Cleanup(func() {
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return tp, exp
}

// only returns the one span exported.
func only(t *testing.T, exp *tracetest.InMemoryExporter) tracetest.SpanStub {
	t.Helper()
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1", len(spans))
	}
	return spans[0]
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// checkAttrs fails unless the span has each of want (key=value, the value
// as attribute.Value.Emit writes it) and none of absent.
func checkAttrs(t *testing.T, s tracetest.SpanStub, want map[attribute.Key]string, absent ...attribute.Key) {
	t.Helper()
	have := attrs(s)
	for k, v := range want {
		if got, ok := have[k]; !ok || got.Emit() != v {
			t.Errorf("span %q: got %s=%q (present %v), want %q", s.Name, k, got.Emit(), ok, v)
		}
	}
	for _, k := range absent {
		if v, ok := have[k]; ok {
			t.Errorf("span %q: got %s=%q, want no such attribute", s.Name, k, v.Emit())
		}
	}
}

// remote returns a context carrying a remote span context, as a
// connector's propagator extracts it from a message's headers.
func remote(t testing.TB, n byte, sampled bool) context.Context {
	t.Helper()
	var flags trace.TraceFlags
	if sampled {
		flags = trace.FlagsSampled
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0xab, 0xcd, 15: n},
		SpanID:     trace.SpanID{0x12, 7: n},
		TraceFlags: flags,
		Remote:     true,
	})
	return trace.ContextWithRemoteSpanContext(context.Background(), sc)
}

func TestSpanIsNamedStageAndKindAndCarriesTheCallsAttributes(t *testing.T) {
	tp, exp := provider(t, sdktrace.AlwaysSample())
	tr := otelx.NewTracer(tp, otelx.WithAttributes(attribute.String("messaging.system", "kafka")))
	_, end := tr.Start(context.Background(), sluice.Call{Pipeline: "orders", Stage: "price", Kind: "map", Items: 1})
	end(nil)
	s := only(t, exp)
	if s.Name != "price map" || s.SpanKind != trace.SpanKindInternal {
		t.Fatalf("got span %q of kind %v, want \"price map\" of kind internal", s.Name, s.SpanKind)
	}
	if s.Parent.IsValid() || s.Status.Code != codes.Unset || len(s.Events) != 0 {
		t.Errorf("got parent %v, status %v, events %v; want a root span, status unset, no events", s.Parent, s.Status, s.Events)
	}
	checkAttrs(t, s, map[attribute.Key]string{
		"sluice.pipeline":   "orders",
		"sluice.stage":      "price",
		"sluice.stage.kind": "map",
		"sluice.items":      "1",
		"messaging.system":  "kafka",
	}, "messaging.operation.type", "messaging.batch.message_count")
	if s.InstrumentationScope.Name != otelx.ScopeName {
		t.Errorf("got scope %q, want %q", s.InstrumentationScope.Name, otelx.ScopeName)
	}
}

func TestFailedCallSetsErrorStatusAndRecordsTheError(t *testing.T) {
	tp, exp := provider(t, sdktrace.AlwaysSample())
	_, end := otelx.NewTracer(tp).Start(context.Background(), sluice.Call{Pipeline: "p", Stage: "store", Kind: "for-each", Items: 1})
	end(fmt.Errorf("insert: %w", errors.New("connection refused")))
	s := only(t, exp)
	if s.Status.Code != codes.Error || s.Status.Description != "insert: connection refused" {
		t.Fatalf("got status %v %q, want Error \"insert: connection refused\"", s.Status.Code, s.Status.Description)
	}
	if len(s.Events) != 1 || s.Events[0].Name != "exception" {
		t.Fatalf("got events %v, want one exception", s.Events)
	}
	var msg string
	for _, kv := range s.Events[0].Attributes {
		if kv.Key == "exception.message" {
			msg = kv.Value.AsString()
		}
	}
	if msg != "insert: connection refused" {
		t.Errorf("got exception.message %q, want the error's text", msg)
	}
}

// An item of a message read from a broker continues the message's trace:
// its span is a Consumer child of the producer's span.
func TestSpanOfARemoteParentContinuesItsTraceAsAConsumer(t *testing.T) {
	tp, exp := provider(t, sdktrace.ParentBased(sdktrace.NeverSample()))
	parent := remote(t, 1, true)
	ctx, end := otelx.NewTracer(tp).Start(parent, sluice.Call{Pipeline: "p", Stage: "decode", Kind: "map", Items: 1})
	// The function's own spans are children of the call's span.
	_, child := tp.Tracer("user").Start(ctx, "lookup")
	child.End()
	end(nil)
	spans := exp.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want the call's and its child's", len(spans))
	}
	lookup, call := spans[0], spans[1]
	psc := trace.SpanContextFromContext(parent)
	if call.SpanContext.TraceID() != psc.TraceID() || call.Parent.SpanID() != psc.SpanID() || !call.Parent.IsRemote() {
		t.Fatalf("got trace %v parent %v, want the message's trace %v and span %v (remote)",
			call.SpanContext.TraceID(), call.Parent.SpanID(), psc.TraceID(), psc.SpanID())
	}
	if call.SpanKind != trace.SpanKindConsumer {
		t.Errorf("got kind %v, want consumer", call.SpanKind)
	}
	checkAttrs(t, call, map[attribute.Key]string{"messaging.operation.type": "process"})
	if lookup.Parent.SpanID() != call.SpanContext.SpanID() || lookup.SpanContext.TraceID() != psc.TraceID() {
		t.Errorf("got the function's span under %v, want under the call's span %v", lookup.Parent.SpanID(), call.SpanContext.SpanID())
	}
}

// A call on several items (a batch insert) links the span of each item's
// message, once each, skipping contexts without a valid span context, and
// puts a span linked to it in the trace of each sampled message.
func TestBatchSpanLinksEachDistinctMessage(t *testing.T) {
	tp, exp := provider(t, sdktrace.AlwaysSample())
	a, b, c := remote(t, 1, true), remote(t, 2, false), remote(t, 3, true)
	links := []context.Context{a, b, a, context.Background(), nil, c, b}
	_, end := otelx.NewTracer(tp).Start(context.Background(),
		sluice.Call{Pipeline: "p", Stage: "insert", Kind: "for-each-chunk", Items: len(links), Links: links})
	end(nil)
	var s sdktrace.ReadOnlySpan
	var inTraces []sdktrace.ReadOnlySpan
	for _, sp := range exp.GetSpans().Snapshots() {
		if sp.Parent().IsValid() {
			inTraces = append(inTraces, sp)
		} else {
			s = sp
		}
	}
	if s == nil {
		t.Fatal("got no batch span (one without a parent)")
	}
	// A span in the trace of each sampled message (a and c), linked to
	// the batch's, so that each message's trace reaches the insert.
	if len(inTraces) != 2 {
		t.Fatalf("got %d spans in the messages' traces, want 2 (the sampled messages a and c)", len(inTraces))
	}
	for i, want := range []context.Context{a, c} {
		sp, psc := inTraces[i], trace.SpanContextFromContext(want)
		if sp.SpanContext().TraceID() != psc.TraceID() || sp.Parent().SpanID() != psc.SpanID() ||
			len(sp.Links()) != 1 || !sp.Links()[0].SpanContext.Equal(s.SpanContext()) {
			t.Errorf("span %d: got trace %v under %v with links %v, want trace %v under %v linked to the batch's span",
				i, sp.SpanContext().TraceID(), sp.Parent().SpanID(), sp.Links(), psc.TraceID(), psc.SpanID())
		}
	}
	var got []trace.SpanContext
	for _, l := range s.Links() {
		got = append(got, l.SpanContext)
	}
	want := []trace.SpanContext{trace.SpanContextFromContext(a), trace.SpanContextFromContext(b), trace.SpanContextFromContext(c)}
	if !slices.EqualFunc(got, want, trace.SpanContext.Equal) {
		t.Fatalf("got links %v, want %v", got, want)
	}
	if s.SpanKind() != trace.SpanKindConsumer {
		t.Errorf("got kind %v; want a consumer root span", s.SpanKind())
	}
	checkAttrs(t, tracetest.SpanStubFromReadOnlySpan(s), map[attribute.Key]string{"sluice.items": "7", "messaging.batch.message_count": "7"})
}

// A batch of items made in the process (no message behind them) makes an
// internal span without links.
func TestBatchOfLocalItemsHasNoLinks(t *testing.T) {
	tp, exp := provider(t, sdktrace.AlwaysSample())
	_, end := otelx.NewTracer(tp).Start(context.Background(),
		sluice.Call{Pipeline: "p", Stage: "insert", Kind: "for-each-chunk", Items: 2, Links: []context.Context{context.Background(), nil}})
	end(nil)
	s := only(t, exp)
	if len(s.Links) != 0 || s.SpanKind != trace.SpanKindInternal {
		t.Fatalf("got %d links, kind %v; want none, internal", len(s.Links), s.SpanKind)
	}
	checkAttrs(t, s, map[attribute.Key]string{"sluice.items": "2"}, "messaging.batch.message_count")
}

// Which spans are recorded is the sampler's choice: a ratio sampler keeps
// that share of root spans; a parent-based one follows the message.
func TestSamplingIsTheProvidersSamplers(t *testing.T) {
	const calls = 20_000
	for _, c := range []struct {
		name     string
		sampler  sdktrace.Sampler
		parent   func(i int) context.Context
		min, max int
	}{
		{"ratio 0", sdktrace.TraceIDRatioBased(0), nil, 0, 0},
		// 1 % of 20,000 is 200, σ ≈ 14: the bounds are 5.6 σ away.
		{"ratio 1%", sdktrace.TraceIDRatioBased(0.01), nil, 120, 280},
		{"ratio 1", sdktrace.TraceIDRatioBased(1), nil, calls, calls},
		{"parent sampled", sdktrace.ParentBased(sdktrace.NeverSample()), func(int) context.Context { return remote(t, 1, true) }, calls, calls},
		{"parent not sampled", sdktrace.ParentBased(sdktrace.AlwaysSample()), func(int) context.Context { return remote(t, 1, false) }, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			tp, exp := provider(t, c.sampler)
			tr := otelx.NewTracer(tp)
			for i := range calls {
				ctx := context.Background()
				if c.parent != nil {
					ctx = c.parent(i)
				}
				_, end := tr.Start(ctx, sluice.Call{Pipeline: "p", Stage: "s", Kind: "map", Items: 1})
				end(nil)
			}
			if n := len(exp.GetSpans()); n < c.min || n > c.max {
				t.Fatalf("got %d spans recorded of %d calls, want %d to %d", n, calls, c.min, c.max)
			}
		})
	}
}

// A call whose span is not recorded still hands its function a context
// with a span context, so that the function's spans follow the sampling
// decision, and allocates only what the provider's Start does.
func TestUnrecordedCallAllocatesOnlyTheProvidersSpan(t *testing.T) {
	tp, exp := provider(t, sdktrace.ParentBased(sdktrace.AlwaysSample()))
	tr := otelx.NewTracer(tp)
	parent := remote(t, 1, false)
	call := sluice.Call{Pipeline: "p", Stage: "decode", Kind: "map", Items: 1}
	ctx, end := tr.Start(parent, call)
	end(nil)
	if sc := trace.SpanContextFromContext(ctx); sc.TraceID() != trace.SpanContextFromContext(parent).TraceID() || sc.IsSampled() {
		t.Fatalf("got span context %v in the call's context, want one of the message's trace, not sampled", sc)
	}
	tracer := tp.Tracer("bare")
	bare := testing.AllocsPerRun(1000, func() {
		_, s := tracer.Start(parent, "decode map")
		s.End()
	})
	got := testing.AllocsPerRun(1000, func() {
		_, end := tr.Start(parent, call)
		end(nil)
	})
	if got > bare || got > 3 {
		t.Fatalf("got %v allocations per unrecorded call, want no more than the SDK's Start alone (%v) and at most 3", got, bare)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("got %d spans recorded, want none", n)
	}
}

func TestNewTracerPanicsOnANilProvider(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "otelx: NewTracer") {
			t.Fatalf("got panic %v, want one naming otelx: NewTracer", r)
		}
	}()
	otelx.NewTracer(nil)
}

// With WithParentSampling, a call under an unsampled message starts no
// span and allocates nothing; its function's spans hang under the
// message's span, unsampled. Sampled messages and calls without a parent
// are traced as without the option.
func TestParentSamplingSkipsUnsampledMessagesForFree(t *testing.T) {
	tp, exp := provider(t, sdktrace.ParentBased(sdktrace.AlwaysSample()))
	tr := otelx.NewTracer(tp, otelx.WithParentSampling())
	call := sluice.Call{Pipeline: "p", Stage: "decode", Kind: "map", Items: 1}
	unsampled := remote(t, 1, false)
	ctx, end := tr.Start(unsampled, call)
	end(nil)
	if ctx != unsampled {
		t.Fatalf("got a new context for a call under an unsampled message, want the one given")
	}
	if n := testing.AllocsPerRun(1000, func() {
		_, end := tr.Start(unsampled, call)
		end(nil)
	}); n != 0 {
		t.Fatalf("got %v allocations per call under an unsampled message, want 0", n)
	}
	for _, parent := range []context.Context{remote(t, 2, true), context.Background()} {
		_, end := tr.Start(parent, call)
		end(nil)
	}
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Parent.SpanID() != (trace.SpanID{0x12, 7: 2}) || spans[1].Parent.IsValid() {
		t.Fatalf("got %d spans, want 2: one under the sampled message, one root", len(spans))
	}
}

// Call.Parent, a message's trace context, parents the call's span, while
// the context the function gets keeps the call's cancellation.
func TestCallParentContinuesTheMessagesTraceAndKeepsCancellation(t *testing.T) {
	tp, exp := provider(t, sdktrace.AlwaysSample())
	parent := remote(t, 9, true)
	ctx, cancel := context.WithCancel(context.Background())
	got, end := otelx.NewTracer(tp).Start(ctx, sluice.Call{Pipeline: "p", Stage: "decode", Kind: "map", Items: 1, Parent: parent})
	cancel()
	if got.Err() == nil {
		t.Fatal("the call's context did not end with the pipeline's")
	}
	end(nil)
	s := only(t, exp)
	psc := trace.SpanContextFromContext(parent)
	if s.SpanContext.TraceID() != psc.TraceID() || s.Parent.SpanID() != psc.SpanID() {
		t.Fatalf("got trace %v under %v, want trace %v under %v", s.SpanContext.TraceID(), s.Parent.SpanID(), psc.TraceID(), psc.SpanID())
	}
}
