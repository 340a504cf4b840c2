package kafkax_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// exampleReadCommitted returns the values of topic's committed records,
// in order, as a read-committed consumer sees them.
func exampleReadCommitted(topic string, want int) []string {
	cl, _ := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var vals []string
	for len(vals) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { vals = append(vals, string(r.Value)) })
	}
	return vals
}

// A Kafka → Kafka pipeline that is exactly once: the records it produces
// and the offsets of the orders they come from commit in one transaction
// per 100ms epoch. The order "x" fails once: its epoch aborts (what it
// had produced is never seen) and its records are delivered again.
func ExampleTransactional() {
	topics := exampleTopics("orders", "invoices")
	exampleProduce(topics[0], "10", "x", "30")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, _ := kafkax.NewSource(ctx, broker, "invoicer", topics[:1], kafkax.StopWhenCaughtUp(),
		kafkax.Transactional("invoicer-1", 100*time.Millisecond))
	defer src.Close()
	sink, _ := kafkax.NewTxnSink(ctx, src, kafkax.ToTopic(topics[1]), kafkax.SinkWorkers(1))
	defer sink.Close()
	p := sluice.New(ctx)
	outs := sluice.Map(p, "invoice", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		if string(m.Value()) == "x" && m.Delivery() == 1 {
			m.Fail(errors.New("not yet"))
		}
		return kafkax.Out{Value: []byte("invoice " + string(m.Value())), From: m.Receipt}, nil
	})
	kafkax.Produce(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	st := src.Stats()
	fmt.Println(strings.Join(exampleReadCommitted(topics[1], 3), ", "))
	fmt.Println("aborted:", st.TxnAborted, "committed at least once:", st.TxnCommitted > 0)
	// Output:
	// invoice 10, invoice x, invoice 30
	// aborted: 1 committed at least once: true
}

// NewTxnSink produces in the transactions of a Transactional source,
// through its client.
func ExampleNewTxnSink() {
	topics := exampleTopics("clicks", "sessions")
	exampleProduce(topics[0], "a", "b")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, _ := kafkax.NewSource(ctx, broker, "sessionizer", topics[:1], kafkax.StopWhenCaughtUp(),
		kafkax.Transactional("sessionizer-1", 50*time.Millisecond))
	defer src.Close()
	sink, err := kafkax.NewTxnSink(ctx, src, kafkax.ToTopic(topics[1]), kafkax.SinkWorkers(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sink.Close() // the client is the source's: src.Close closes it
	p := sluice.New(ctx)
	msgs := kafkax.Read(p, "read", src)
	outs := sluice.Map(p, "copy", msgs, 1, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		return kafkax.Out{Value: m.Value(), From: m.Receipt}, nil
	})
	kafkax.Produce(p, "write", outs, sink)
	fmt.Println(p.Wait(), exampleReadCommitted(topics[1], 2))
	// Output:
	// <nil> [a b]
}

// DeadLetterTopic sends a record whose last delivery failed to a
// dead-letter topic in the transaction that commits its offset: a
// read-committed consumer sees it once.
func ExampleDeadLetterTopic() {
	topics := exampleTopics("payments", "ok", "dead")
	exampleProduce(topics[0], "10", "x", "30")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, _ := kafkax.NewSource(ctx, broker, "payer-txn", topics[:1], kafkax.StopWhenCaughtUp(),
		kafkax.Transactional("payer-txn-1", 50*time.Millisecond), kafkax.Redeliver(2, 0), kafkax.DeadLetterTopic(topics[2]))
	defer src.Close()
	sink, _ := kafkax.NewTxnSink(ctx, src, kafkax.ToTopic(topics[1]), kafkax.SinkWorkers(1))
	defer sink.Close()
	p := sluice.New(ctx)
	outs := sluice.FlatMap(p, "check", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg, emit func(kafkax.Out) bool) error {
		if string(m.Value()) == "x" {
			m.Fail(errors.New("not a number"))
			return nil
		}
		emit(kafkax.Out{Value: m.Value(), From: m.Receipt})
		return nil
	})
	kafkax.Produce(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(exampleReadCommitted(topics[1], 2), exampleReadCommitted(topics[2], 1), src.Stats().Parked)
	// Output:
	// [10 30] [x] 1
}
