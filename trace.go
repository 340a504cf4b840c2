package sluice

import (
	"context"
	"log/slog"
)

// Tracing, without a dependency: the core defines what a tracer and a
// propagator must do, and a module of its own (otelx) implements both
// with OpenTelemetry. A pipeline without a Tracer builds no span step and
// carries no trace: it pays a nil check per item where a stage hands
// items on. How an item's trace travels with it is step_span.go's
// traceSlot.

// Tracer starts a span around each call of a stage's function. Give one to
// a pipeline with [Tracing]; the otelx module makes one from an
// OpenTelemetry TracerProvider.
type Tracer interface {
	// Start begins the span of one call: a child of call.Parent's span
	// when the item has a trace (its message's, or the one its source
	// began), linked to call.Links when the call handles several such
	// items. ctx is the
	// call's context (the pipeline's, or a Timeout's): the context Start
	// returns must keep its deadline and cancellation, and the function
	// gets it, so that its own spans are children of this one. end is
	// called once, with the call's error (nil on success), when the call
	// and its retries are over. Start is called from every worker of
	// every stage at once: it must be safe for concurrent use.
	//
	// A source calls Start too, with Kind "source", for each item that
	// has no trace — its message came without a trace context, or it
	// carries no receipt at all (an int from FromSlice) — and gives the
	// item the context returned (attached to its receipt, if it has one,
	// and carried beside it in any case), so that the calls of every
	// later stage on it, and on what it becomes, are in one trace: a
	// result continues its input's, a batch's call links its items', a
	// window's pane continues the trace of the item that opened the
	// window. A tracer that returns the context it was given starts no
	// trace there: each later call is then on its own.
	// A tracer that samples should return a context that carries its
	// decision (an unsampled span context) when it drops the item.
	Start(ctx context.Context, call Call) (_ context.Context, end func(err error))
}

// Call describes one call of a stage's function to a [Tracer].
type Call struct {
	Pipeline string
	Stage    string
	Kind     string // map, ordered-map, filter, flat-map, for-each or for-each-chunk (docs/stages.md)
	// Items is how many items the call handles: 1, or a chunk's or
	// batch's length (ForEachChunk, a ForEach over batches).
	Items int
	// Parent is the item's trace for a call on one item: that of the
	// message it derives from (see [Receipt.Trace]), or else the one its
	// source began; nil when it has none.
	Parent context.Context
	// Links are the traces of the items of a call that handles several
	// (a batch insert, a chunk), as Parent is an item's: the span links
	// them.
	// Nil for a call on one item. Valid only during Start: copy what is
	// kept.
	Links []context.Context
	// Message describes the broker's message the item derives from, for
	// a call on one item whose receipt's connector describes it (see
	// [Describer]); zero otherwise.
	Message Message
	// Attempts, called from end, returns the calls made: 1, or more when
	// [Retry] called the function again. Nil for a call that is not a
	// stage function's (a source's span, which starts an item's trace).
	Attempts func() int
}

// Message describes a message a connector's source read, as a [Tracer]
// shows it: OpenTelemetry's messaging attributes.
type Message struct {
	System      string // the broker: "kafka", "nats" (messaging.system)
	Destination string // the topic or subject it was read from (messaging.destination.name)
	ID          string // its ID at the broker, "" if it has none (messaging.message.id)
	Partition   string // the partition it was read from, "" if none (messaging.destination.partition.id)
}

// Describer is implemented by a connector's [Settler] that describes the
// message behind each receipt it made while the receipt is not settled:
// [Receipt.Message] asks it. It is called only when a pipeline traces,
// once per call on an item and per item a source starts a trace for; it
// must be safe for concurrent use.
type Describer interface {
	Describe(key uint64) (Message, bool)
}

// Message returns the description of r's message by its connector (see
// [Describer]), and whether it has one.
func (r Receipt) Message() (Message, bool) {
	if r.t == nil {
		return Message{}, false
	}
	if d, ok := r.t.to.(Describer); ok {
		return d.Describe(r.t.key)
	}
	return Message{}, false
}

// Headers is a message's headers as a [Propagator] reads and writes them;
// connectors implement it over their clients' headers. Its methods are
// those of OpenTelemetry's propagation.TextMapCarrier.
type Headers interface {
	Get(key string) string
	Set(key, value string)
	Keys() []string
}

// Propagator carries a trace context in a message's headers: a source
// extracts it from what it reads, a sink injects it into what it writes.
// Connectors take one as an option; the otelx module makes one from
// OpenTelemetry's propagators (W3C trace context by default).
type Propagator interface {
	Extract(ctx context.Context, h Headers) context.Context
	Inject(ctx context.Context, h Headers)
}

// Observe is what a connector's sources and sinks observe with: the
// connectors' Propagate and Logger options set it, on a source and a sink
// alike. The zero Observe propagates nothing and logs nothing.
type Observe struct {
	// Propagator carries the trace context of each message: a source
	// extracts it into the message's receipt ([Receipt.WithTrace]), a
	// sink injects the receipt's into what it writes. Nil: no trace
	// context is read or written, and nothing is done per message.
	Propagator Propagator
	// Logger gets what an operator needs to know: nothing per message,
	// failures counted by a [Tally]. Nil: no logs.
	Logger *slog.Logger
}
