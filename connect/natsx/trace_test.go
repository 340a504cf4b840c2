package natsx_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// traceKey holds, in a context, the traceparent a fakePropagator read.
type traceKey struct{}

// fakePropagator carries the "traceparent" header as it is: what
// otelx.W3C() does for a sampled span context, without OpenTelemetry.
type fakePropagator struct{}

func (fakePropagator) Extract(ctx context.Context, h sluice.Headers) context.Context {
	if v := h.Get("traceparent"); v != "" {
		return context.WithValue(ctx, traceKey{}, v)
	}
	return ctx
}

func (fakePropagator) Inject(ctx context.Context, h sluice.Headers) {
	if v, ok := ctx.Value(traceKey{}).(string); ok {
		h.Set("traceparent", v)
	}
}

// traceID is the trace-id field of a traceparent header.
func traceID(traceparent string) string {
	parts := strings.Split(traceparent, "-")
	if len(parts) != 4 {
		return ""
	}
	return parts[1]
}

// callTracer records the trace contexts the pipeline gives each stage's
// spans: a parent per call on one item, links per call on several.
type callTracer struct {
	mu       sync.Mutex
	parents  map[string][]string         // by stage: the traceparent of each call's Parent
	links    map[string][]string         // by stage: the traceparents of the calls' Links
	messages map[string][]sluice.Message // by stage: the message of each call on one
}

// Start records the call; the span a source starts for a message without
// a trace has the trace "source:<message ID>".
func (c *callTracer) Start(ctx context.Context, call sluice.Call) (context.Context, func(error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.messages == nil {
		c.messages = map[string][]sluice.Message{}
	}
	if call.Message != (sluice.Message{}) {
		c.messages[call.Stage] = append(c.messages[call.Stage], call.Message)
	}
	if call.Kind == "source" {
		ctx = context.WithValue(ctx, traceKey{}, "source:"+call.Message.ID)
	}
	if call.Parent != nil {
		v, _ := call.Parent.Value(traceKey{}).(string)
		c.parents[call.Stage] = append(c.parents[call.Stage], v)
	}
	for _, l := range call.Links {
		v, _ := l.Value(traceKey{}).(string)
		c.links[call.Stage] = append(c.links[call.Stage], v)
	}
	return ctx, func(error) {}
}

// A message published with a traceparent header continues its trace
// through the pipeline: its receipt carries the trace context (so the
// stage on it has it as its span's parent, the sink's write links it),
// and the message the sink publishes has a traceparent of the same
// trace; a message without one gets the trace its source's span starts.
// Every span on one message describes it (system, subject, ID).
func TestPropagateCarriesTheTraceFromTheSourceThroughTheSink(t *testing.T) {
	js := serverWith(t, "IN", "OUT")
	ctx := ctxT(t, time.Minute)
	const traced = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for i, tp := range []string{traced, ""} {
		h := nats.Header{}
		if tp != "" {
			h.Set("traceparent", tp)
		}
		h.Set(jetstream.MsgIDHeader, itoa(i))
		if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: "in.x", Data: []byte(itoa(i)), Header: h}); err != nil {
			t.Fatal(err)
		}
	}
	prop := natsx.Propagate(fakePropagator{})
	src := newSource(t, ctx, js, "IN", "copy", natsx.StopWhenCaughtUp(), natsx.IdleCheck(20*time.Millisecond), prop)
	sink := newSink(t, ctx, js, natsx.ToStream("OUT"), prop)
	tr := &callTracer{parents: map[string][]string{}, links: map[string][]string{}}
	p := sluice.New(ctx, sluice.Tracing(tr))
	var mu sync.Mutex
	seen := map[string]string{} // data → the traceparent of its receipt's trace
	outs := sluice.Map(p, "copy", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) (natsx.Out, error) {
		v := "none"
		if tc := m.Trace(); tc != nil {
			v, _ = tc.Value(traceKey{}).(string)
		}
		mu.Lock()
		seen[string(m.Data())] = v
		mu.Unlock()
		return natsx.Out{Subject: "out.x", Data: m.Data(), ID: m.ID(), From: m.Receipt}, nil
	})
	natsx.Publish(p, "publish", outs, sink)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if seen["0"] != traced || seen["1"] != "source:1" {
		t.Fatalf("receipts' traces: %v; want 0 to carry %s and 1 the source's", seen, traced)
	}
	if got := tr.parents["copy"]; len(got) != 2 || !slices.Contains(got, traced) || !slices.Contains(got, "source:1") {
		t.Fatalf("parents of the copy stage's spans: %q; want the traced message's and the source's span of the other", got)
	}
	if got := tr.messages["read"]; len(got) != 1 || got[0] != (sluice.Message{System: "nats", Destination: "in.x", ID: "1"}) {
		t.Fatalf("the source's spans: %+v; want one, for message 1, describing it", got)
	}
	if got := tr.messages["copy"]; len(got) != 2 || got[0].System != "nats" || got[0].Destination != "in.x" || got[0].ID == got[1].ID {
		t.Fatalf("the copy stage's spans describe %+v; want each its own message", got)
	}
	// A write of one message has its trace as its span's parent; a write
	// of both links them.
	if got := append(tr.parents["publish"], tr.links["publish"]...); len(got) != 2 || !slices.Contains(got, traced) {
		t.Fatalf("parents and links of the publish stage's spans: %q; want the two messages' traces", got)
	}

	c, err := js.OrderedConsumer(ctx, "OUT", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Fetch(2, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for m := range b.Messages() {
		got[string(m.Data())] = m.Headers().Get("traceparent")
	}
	if len(got) != 2 || traceID(got["0"]) != traceID(traced) || got["1"] != "source:1" {
		t.Fatalf("published traceparents by message: %q; want 0's of trace %s, and on 1 the trace its source began", got, traceID(traced))
	}
}

// Without Propagate, the source attaches no trace context and the sink
// writes none, whatever the headers hold.
func TestWithoutPropagateNoTraceIsRead(t *testing.T) {
	js := serverWith(t, "IN", "OUT")
	ctx := ctxT(t, time.Minute)
	h := nats.Header{}
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: "in.x", Data: []byte("0"), Header: h}); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, ctx, js, "IN", "copy", natsx.StopWhenCaughtUp(), natsx.IdleCheck(20*time.Millisecond))
	p := sluice.New(ctx)
	sluice.ForEach(p, "check", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) error {
		if m.Trace() != nil {
			t.Errorf("message %s carries a trace without Propagate", m.Data())
		}
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestHeaderCarrierReadsAndWritesNATSHeaders(t *testing.T) {
	h := nats.Header{}
	c := natsx.HeaderCarrier(h)
	c.Set("traceparent", "a")
	c.Set("traceparent", "b")
	c.Set("tracestate", "x=1")
	if got := h.Get("traceparent"); got != "b" || len(h["traceparent"]) != 1 {
		t.Fatalf("after two Sets: %q; want b alone", h["traceparent"])
	}
	if c.Get("Traceparent") != "" || c.Get("tracestate") != "x=1" {
		t.Fatalf("Get matches keys exactly: got %q, %q", c.Get("Traceparent"), c.Get("tracestate"))
	}
	if keys := c.Keys(); len(keys) != 2 {
		t.Fatalf("Keys: %q; want 2", keys)
	}
}
