package otelx_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/otelx"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// natsLike is a Settler that describes its messages as a NATS connector
// would.
type natsLike struct{}

func (natsLike) Settle(uint64, error) {}
func (natsLike) Describe(key uint64) (sluice.Message, bool) {
	return sluice.Message{System: "nats", Destination: "orders.eu", ID: fmt.Sprint("seq-", key)}, true
}

type order struct {
	sluice.Receipt
	n int
}

func attrsOf(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestAnItemFromABrokerIsOneTraceWithMessagingAttributesAndAttempts(t *testing.T) {
	tp, exp := provider(t, sdktrace.AlwaysSample())
	p := sluice.New(context.Background(), sluice.Tracing(otelx.NewTracer(tp)))
	in := make([]order, 5)
	for i := range in {
		in[i] = order{sluice.NewReceipt(natsLike{}, uint64(i)), i}
	}
	var mu sync.Mutex
	failed := map[int]bool{}
	priced := sluice.Map(p, "price", sluice.FromSlice(p, "read", in), 2, func(_ context.Context, o order) (order, error) {
		mu.Lock()
		defer mu.Unlock()
		if o.n == 3 && !failed[o.n] { // item 3 fails once
			failed[o.n] = true
			return o, errors.New("busy")
		}
		return o, nil
	}, sluice.Retry(3, 0, 0))
	sluice.ForEach(p, "store", priced, 1, func(context.Context, order) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans().Snapshots()
	traces := map[trace.TraceID]map[string]sdktrace.ReadOnlySpan{} // stage → span, per trace
	for _, s := range spans {
		tid := s.SpanContext().TraceID()
		if traces[tid] == nil {
			traces[tid] = map[string]sdktrace.ReadOnlySpan{}
		}
		stage := attrsOf(s)[otelx.StageKey].AsString()
		if _, dup := traces[tid][stage]; dup {
			t.Fatalf("trace %v has two spans of stage %s", tid, stage)
		}
		traces[tid][stage] = s
	}
	if len(traces) != len(in) {
		t.Fatalf("got %d traces over %d spans, want one per item: %d", len(traces), len(spans), len(in))
	}
	for tid, st := range traces {
		src, price, store := st["read"], st["price"], st["store"]
		if src == nil || price == nil || store == nil {
			t.Fatalf("trace %v: got stages %v, want read, price and store", tid, st)
		}
		if price.Parent().SpanID() != src.SpanContext().SpanID() || store.Parent().SpanID() != src.SpanContext().SpanID() {
			t.Fatalf("trace %v: price and store are not children of the source's span", tid)
		}
		if src.SpanKind() != trace.SpanKindConsumer || attrsOf(src)["messaging.operation.type"].AsString() != "receive" {
			t.Fatalf("source span: got kind %v, attributes %v; want a Consumer span that receives", src.SpanKind(), attrsOf(src))
		}
		id := attrsOf(src)["messaging.message.id"].AsString()
		for _, s := range []sdktrace.ReadOnlySpan{src, price, store} {
			a := attrsOf(s)
			if a["messaging.system"].AsString() != "nats" || a["messaging.destination.name"].AsString() != "orders.eu" ||
				a["messaging.message.id"].AsString() != id || id == "" {
				t.Fatalf("span %s: got attributes %v, want messaging.system nats, destination orders.eu and the message's ID", s.Name(), a)
			}
		}
		attempts, has := attrsOf(price)[otelx.AttemptsKey]
		if id == "seq-3" {
			if attempts.AsInt64() != 2 {
				t.Fatalf("the retried call's span: got sluice.attempts %v, want 2", attempts.Emit())
			}
		} else if has {
			t.Fatalf("a call made once: got sluice.attempts %v, want none", attempts.Emit())
		}
	}
}
