package kafkax_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// headerTrace is a sluice.Propagator for the example: it carries the
// traceparent header as a context value (otelx.W3C() is the real one).
type headerTrace struct{}

type traceparentKey struct{}

func (headerTrace) Extract(ctx context.Context, h sluice.Headers) context.Context {
	if v := h.Get("traceparent"); v != "" {
		return context.WithValue(ctx, traceparentKey{}, v)
	}
	return ctx
}

func (headerTrace) Inject(ctx context.Context, h sluice.Headers) {
	if v, ok := ctx.Value(traceparentKey{}).(string); ok {
		h.Set("traceparent", v)
	}
}

// With Propagate on the source and the sink, the record produced from a
// record carries its trace context: here its traceparent header.
func ExamplePropagate() {
	topics := exampleTopics("traced-in", "traced-out")
	cl, _ := kgo.NewClient(kgo.SeedBrokers(broker))
	defer cl.Close()
	cl.ProduceSync(context.Background(), &kgo.Record{Topic: topics[0], Value: []byte("tick"),
		Headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}}})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prop := kafkax.Propagate(headerTrace{})
	src, _ := kafkax.NewSource(ctx, broker, "traced", topics[:1], kafkax.StopWhenCaughtUp(), prop)
	defer src.Close()
	sink, _ := kafkax.NewSink(ctx, broker, kafkax.ToTopic(topics[1]), prop)
	defer sink.Close()

	p := sluice.New(ctx)
	outs := sluice.Map(p, "copy", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		return kafkax.Out{Value: m.Value(), From: m.Receipt}, nil // From carries the trace
	})
	kafkax.Produce(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	out, _ := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topics[1]))
	defer out.Close()
	r := out.PollRecords(ctx, 1).Records()[0]
	h := kafkax.HeaderCarrier(r.Headers)
	fmt.Println(string(r.Value), h.Get("traceparent"))
	// Output:
	// tick 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
}

// A source with a Logger says when it joins its group and which
// partitions it gets.
func ExampleLogger() {
	topics := exampleTopics("logged")
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey, "member", "group", "partitions":
				return slog.Attr{} // not the same from run to run
			}
			return a
		}}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, _ := kafkax.NewSource(ctx, broker, "logged-"+topics[0], topics, kafkax.StopWhenCaughtUp(), kafkax.Logger(log))
	p := sluice.New(ctx)
	sluice.ForEach(p, "ack", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg) error {
		m.Ack()
		return nil
	})
	p.Wait()
	src.Close()
	// Output:
	// level=INFO msg="group joined" generation=1
	// level=INFO msg="partitions assigned" generation=1
	// level=INFO msg="partitions revoked" generation=1
}

// HeaderCarrier lets a propagator read and write a record's headers.
func ExampleHeaderCarrier() {
	r := &kgo.Record{}
	h := (*kafkax.HeaderCarrier)(&r.Headers)
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	fmt.Println(len(r.Headers), h.Get("traceparent"), h.Keys())
	// Output:
	// 1 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 [traceparent]
}
