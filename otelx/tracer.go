package otelx

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the spans and metrics otelx
// makes: the name it gives the TracerProvider and the MeterProvider.
const ScopeName = "github.com/sluicehq/sluice/otelx"

// Attribute keys of the spans (and, for pipeline and stage, the metrics)
// otelx makes.
const (
	PipelineKey  = attribute.Key("sluice.pipeline")   // the pipeline's name (see sluice.Named)
	StageKey     = attribute.Key("sluice.stage")      // the stage's name
	StageKindKey = attribute.Key("sluice.stage.kind") // map, filter, for-each, …
	ItemsKey     = attribute.Key("sluice.items")      // items the call handles
	AttemptsKey  = attribute.Key("sluice.attempts")   // calls made, when Retry made more than one
)

// Messaging attributes of OpenTelemetry's semantic conventions.
const (
	messagingOperationType = attribute.Key("messaging.operation.type")
	messagingBatchCount    = attribute.Key("messaging.batch.message_count")
	messagingSystem        = attribute.Key("messaging.system")
	messagingDestination   = attribute.Key("messaging.destination.name")
	messagingMessageID     = attribute.Key("messaging.message.id")
	messagingPartition     = attribute.Key("messaging.destination.partition.id")
)

// messageAttributes appends the messaging attributes of m, a call's
// message, to attrs.
func messageAttributes(attrs []attribute.KeyValue, m sluice.Message) []attribute.KeyValue {
	if m.System == "" {
		return attrs
	}
	attrs = append(attrs, messagingSystem.String(m.System))
	for _, a := range []struct {
		k attribute.Key
		v string
	}{{messagingDestination, m.Destination}, {messagingMessageID, m.ID}, {messagingPartition, m.Partition}} {
		if a.v != "" {
			attrs = append(attrs, a.k.String(a.v))
		}
	}
	return attrs
}

// Option configures [NewTracer].
type Option interface{ apply(*tracer) }

type optionFunc func(*tracer)

func (f optionFunc) apply(t *tracer) { f(t) }

// WithAttributes adds attributes to every span the tracer records, such as
// messaging.system or messaging.destination.name for a pipeline that
// consumes one topic.
func WithAttributes(kv ...attribute.KeyValue) Option {
	kv = append([]attribute.KeyValue(nil), kv...)
	return optionFunc(func(t *tracer) { t.extra = append(t.extra, kv...) })
}

// WithParentSampling makes the tracer start no span for a call whose
// parent (the message's span context) is valid but not sampled: the call
// runs in the context it was given, so the spans its function makes are
// children of the message's span. That is what a ParentBased sampler (the
// SDK's default) would decide, without asking it: an unsampled call then
// costs a context lookup instead of the provider's Start (with the SDK,
// about 0.4 µs and 2 allocations). Do not use it with a sampler that may
// record the child of an unsampled parent. Calls without a parent are
// still the sampler's to decide.
func WithParentSampling() Option {
	return optionFunc(func(t *tracer) { t.parentSampling = true })
}

// NewTracer returns a [sluice.Tracer] that makes a span of tp's for every
// call of a stage's function; give it to a pipeline with [sluice.Tracing].
// It panics if tp is nil; pass otel.GetTracerProvider() for the global
// provider.
//
// A span is named "<stage> <kind>" ("price map", "store for-each-chunk")
// and has the attributes sluice.pipeline, sluice.stage, sluice.stage.kind
// and sluice.items; sluice.attempts when Retry called the function more
// than once; and for a call on an item whose connector describes its
// message ([sluice.Call].Message), OpenTelemetry's messaging attributes
// messaging.system, messaging.destination.name, messaging.message.id and
// messaging.destination.partition.id (those the message has). A source
// starts the trace of each item that has none with a span ended at once:
// of kind Consumer with messaging.operation.type "receive" for an item
// whose message came without a trace context, of kind Internal for an
// item from no broker (an int from sluice.FromSlice); the spans of every
// later stage on the item, and on what it becomes, are in that trace. A
// span's parent is the span context of the call's context: the item's
// trace (its message's, or the one its source began), or the pipeline's
// context. A call on an item of a message from a broker (a remote parent)
// makes a span of kind Consumer with messaging.operation.type "process";
// any other call, one of kind Internal. A call on several items
// ([sluice.Call.Links]) links the span of each item's trace, once per
// distinct span context (the provider's link limit, 128 by default, still
// applies), adds messaging.batch.message_count, and puts a span in each
// sampled item's trace that links back to it. A call that fails
// gets the status Error and an exception event (RecordError).
//
// Whether a span is recorded is the provider's sampler's choice (but see
// [WithParentSampling]): it sees the name, the kind, the parent and the
// links, but not the attributes, which are set on recorded spans only. A
// call whose span is not recorded costs what the provider's Start costs
// (with the SDK and a sampler that drops it, about 0.4 µs and 2 small
// allocations: the span and its context); the tracer adds none. A recorded
// span costs the SDK's span, its attributes and the work of its
// processors (about 2 µs and 7 allocations with the SDK).
func NewTracer(tp trace.TracerProvider, opts ...Option) sluice.Tracer {
	if tp == nil {
		panic("otelx: NewTracer called with a nil TracerProvider; pass otel.GetTracerProvider() for the global one")
	}
	t := &tracer{tr: tp.Tracer(ScopeName)}
	for _, o := range opts {
		o.apply(t)
	}
	empty := map[nameKey]string{}
	t.names.Store(&empty)
	return t
}

type tracer struct {
	tr             trace.Tracer
	extra          []attribute.KeyValue // WithAttributes
	parentSampling bool                 // WithParentSampling

	// names caches span names, so that a call whose span is not recorded
	// allocates none: an immutable map, replaced under mu when it grows.
	names atomic.Pointer[map[nameKey]string]
	mu    sync.Mutex
}

type nameKey struct{ stage, kind string }

// maxNames bounds the name cache: stage names are few, but nothing stops a
// program from making pipelines with fresh stage names for ever.
const maxNames = 4096

var (
	internalStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
	consumerStart = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
)

func (t *tracer) name(c *sluice.Call) string {
	k := nameKey{c.Stage, c.Kind}
	if n, ok := (*t.names.Load())[k]; ok {
		return n
	}
	n := c.Stage + " " + c.Kind
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.names.Load()
	if len(old) < maxNames {
		m := make(map[nameKey]string, len(old)+1)
		for k, v := range old {
			m[k] = v
		}
		m[k] = n
		t.names.Store(&m)
	}
	return n
}

// Start implements [sluice.Tracer].
func (t *tracer) Start(ctx context.Context, c sluice.Call) (context.Context, func(error)) {
	if ctx == nil {
		panic(fmt.Sprintf("otelx: Tracer.Start called with a nil context (pipeline %q, stage %q)", c.Pipeline, c.Stage))
	}
	if c.Parent != nil {
		ctx = withParent(ctx, c.Parent)
	}
	call := ctx // the call's context, before the span
	parent := trace.SpanContextFromContext(ctx)
	if t.parentSampling && parent.IsValid() && !parent.IsSampled() {
		return ctx, endNothing
	}
	remote := parent.IsRemote()
	opts := internalStart
	var links []trace.Link
	if len(c.Links) > 0 {
		links = linksOf(c.Links)
		for _, l := range links {
			remote = remote || l.SpanContext.IsRemote()
		}
		opts = []trace.SpanStartOption{trace.WithLinks(links...), kindOption(remote)}
	} else if remote || c.Message.System != "" {
		opts = consumerStart
	}
	ctx, span := t.tr.Start(ctx, t.name(&c), opts...)
	var inTraces []trace.Span
	if len(links) > 0 {
		inTraces = t.inMessageTraces(call, &c, links, span.SpanContext())
	}
	if !span.IsRecording() {
		span.End() // a span that records nothing may end at once
		if len(inTraces) == 0 {
			return ctx, endNothing
		}
		return ctx, func(err error) { endAll(inTraces, err) }
	}
	attrs := make([]attribute.KeyValue, 0, 6+len(t.extra))
	attrs = append(attrs,
		PipelineKey.String(c.Pipeline),
		StageKey.String(c.Stage),
		StageKindKey.String(c.Kind),
		ItemsKey.Int(c.Items))
	switch {
	case remote || c.Message.System != "" && c.Attempts != nil:
		attrs = append(attrs, messagingOperationType.String("process"))
	case c.Message.System != "":
		attrs = append(attrs, messagingOperationType.String("receive")) // a source's span, which starts the item's trace
	}
	attrs = messageAttributes(attrs, c.Message)
	if len(links) > 0 {
		attrs = append(attrs, messagingBatchCount.Int(c.Items))
	}
	attrs = append(attrs, t.extra...)
	span.SetAttributes(attrs...)
	attempts := c.Attempts // not c: the closure would move c to the heap on every path
	return ctx, func(err error) {
		if attempts != nil {
			if n := attempts(); n > 1 {
				span.SetAttributes(AttemptsKey.Int(n))
			}
		}
		end(span, err)
		endAll(inTraces, err)
	}
}

// end ends span with err's status.
func end(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func endAll(spans []trace.Span, err error) {
	for _, s := range spans {
		end(s, err)
	}
}

// inMessageTraces starts, for a call on several items, a span in the
// trace of each sampled message among links, linked to the call's own
// span (batch): so that each message's trace reads from its producer to
// the batch that stored it, though the batch's span can have one parent
// at most. A message whose trace is not sampled costs nothing.
func (t *tracer) inMessageTraces(call context.Context, c *sluice.Call, links []trace.Link, batch trace.SpanContext) []trace.Span {
	var spans []trace.Span
	for _, l := range links {
		if !l.SpanContext.IsSampled() {
			continue
		}
		_, s := t.tr.Start(trace.ContextWithSpanContext(call, l.SpanContext), t.name(c),
			trace.WithLinks(trace.Link{SpanContext: batch}), kindOption(l.SpanContext.IsRemote()),
			trace.WithAttributes(PipelineKey.String(c.Pipeline), StageKey.String(c.Stage), StageKindKey.String(c.Kind),
				messagingBatchCount.Int(c.Items)))
		spans = append(spans, s)
	}
	return spans
}

// withParent returns ctx (keeping its deadline and cancellation) with the
// span context and baggage of parent, a message's trace context.
func withParent(ctx, parent context.Context) context.Context {
	if sc := trace.SpanContextFromContext(parent); sc.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, sc)
	}
	if b := baggage.FromContext(parent); b.Len() > 0 {
		ctx = baggage.ContextWithBaggage(ctx, b)
	}
	return ctx
}

func endNothing(error) {}

func kindOption(remote bool) trace.SpanStartOption {
	if remote {
		return consumerStart[0]
	}
	return internalStart[0]
}

// linksOf returns a link to each valid, distinct span context of ctxs.
func linksOf(ctxs []context.Context) []trace.Link {
	links := make([]trace.Link, 0, len(ctxs))
	var seen map[[24]byte]struct{}
	for _, ctx := range ctxs {
		if ctx == nil {
			continue
		}
		sc := trace.SpanContextFromContext(ctx)
		if !sc.IsValid() {
			continue
		}
		var id [24]byte
		tid, sid := sc.TraceID(), sc.SpanID()
		copy(id[:16], tid[:])
		copy(id[16:], sid[:])
		if seen == nil {
			seen = make(map[[24]byte]struct{}, len(ctxs))
		}
		if _, dup := seen[id]; dup {
			continue
		}
		seen[id] = struct{}{}
		links = append(links, trace.Link{SpanContext: sc})
	}
	return links
}
