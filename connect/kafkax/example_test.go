package kafkax_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// exampleTopics creates topics with one partition each, named after
// names, and returns their names; the examples run against the tests'
// broker (scripts/kafka start prints the address of one).
func exampleTopics(names ...string) []string {
	cl, _ := kgo.NewClient(kgo.SeedBrokers(broker))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("example-%s-%d-%d", n, os.Getpid(), topicSeq.Add(1))
		adm.CreateTopic(context.Background(), 1, 1, nil, out[i])
	}
	// A topic just created may be missing from a broker's metadata for a
	// moment, and NewSink and NewSource check it there: wait until every
	// one is listed without an error (bounded), as a user's setup would.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		td, err := adm.ListTopics(ctx, out...)
		ready := err == nil
		for _, n := range out {
			ready = ready && td.Has(n) && td[n].Err == nil
		}
		if ready {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return out
}

// exampleProduce stores values in topic, in order.
func exampleProduce(topic string, values ...string) {
	cl, _ := kgo.NewClient(kgo.SeedBrokers(broker))
	defer cl.Close()
	for _, v := range values {
		cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Value: []byte(v)})
	}
}

// exampleRead returns the values of topic, in order, with the given
// header of each appended after " | " when header is not empty.
func exampleRead(topic string, want int, header string) []string {
	cl, _ := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var vals []string
	for len(vals) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if header != "" {
				v += " | " + header + "=" + headerOf(r, header)
			}
			vals = append(vals, v)
		})
	}
	return vals
}

// A pipeline that reads orders from one topic, upper-cases them and
// produces them to another; each order's offset is committed once its
// result is stored.
func Example() {
	topics := exampleTopics("orders", "loud")
	exampleProduce(topics[0], "tea", "cake", "jam")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	src, err := kafkax.NewSource(ctx, broker, "shouter", topics[:1], kafkax.StopWhenCaughtUp())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	sink, err := kafkax.NewSink(ctx, broker, kafkax.ToTopic(topics[1]))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sink.Close()
	p := sluice.New(ctx)
	msgs := kafkax.Read(p, "read", src)
	outs := sluice.Map(p, "shout", msgs, 2, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		return kafkax.Out{Key: m.Key(), Value: []byte(strings.ToUpper(string(m.Value()))), From: m.Receipt}, nil
	})
	kafkax.Produce(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	loud := exampleRead(topics[1], 3, "")
	sort.Strings(loud)
	fmt.Println(loud)
	fmt.Printf("settled %d, in flight %d\n", src.Stats().Acked, src.Stats().InFlight)
	// Output:
	// [CAKE JAM TEA]
	// settled 3, in flight 0
}

// NewSource reports a topic that does not exist, naming it.
func ExampleNewSource() {
	_, err := kafkax.NewSource(context.Background(), broker, "readers", []string{"no-such-topic"})
	fmt.Println(err)
	// Output:
	// kafkax: source of group "readers": topic "no-such-topic": UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition.
}

// NewSink reports a default topic that does not exist, naming it.
func ExampleNewSink() {
	_, err := kafkax.NewSink(context.Background(), broker, kafkax.ToTopic("no-such-topic"))
	fmt.Println(err)
	// Output:
	// kafkax: sink: topic "no-such-topic": UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition.
}

// Read emits records as Msg values; here each word of a record becomes a
// record of its own, and the source record is committed once all of them
// are stored (FlatMap holds its receipt once per result).
func ExampleRead() {
	topics := exampleTopics("lines", "words")
	exampleProduce(topics[0], "a b", "c")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, _ := kafkax.NewSource(ctx, broker, "splitter", topics[:1], kafkax.StopWhenCaughtUp())
	defer src.Close()
	// One write at a time: the records are stored in the order read.
	sink, _ := kafkax.NewSink(ctx, broker, kafkax.ToTopic(topics[1]), kafkax.SinkWorkers(1))
	defer sink.Close()
	p := sluice.New(ctx)
	outs := sluice.FlatMap(p, "split", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg, emit func(kafkax.Out) bool) error {
		words := strings.Fields(string(m.Value()))
		for _, w := range words {
			emit(kafkax.Out{Value: []byte(w), From: m.Receipt})
		}
		return nil
	})
	kafkax.Produce(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(exampleRead(topics[1], 3, ""), "settled", src.Stats().Acked)
	// Output:
	// [a b c] settled 2
}

// Produce writes records as they arrive, and the core settles each one's
// From once the broker has stored it; here with no source at all.
func ExampleProduce() {
	topics := exampleTopics("greetings")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// One write at a time: the records are stored in order.
	sink, _ := kafkax.NewSink(ctx, broker, kafkax.ToTopic(topics[0]), kafkax.SinkWorkers(1))
	defer sink.Close()
	p := sluice.New(ctx)
	outs := sluice.FromSlice(p, "outs", []kafkax.Out{{Value: []byte("hello")}, {Value: []byte("world")}})
	kafkax.Produce(p, "write", outs, sink)
	fmt.Println(p.Wait(), exampleRead(topics[0], 2, ""), sink.Stats().Produced)
	// Output:
	// <nil> [hello world] 2
}

// Write stores records and returns once the broker has acknowledged all
// of them; it settles nothing, so it serves in a stage of your own too.
func ExampleSink_Write() {
	topics := exampleTopics("written")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sink, _ := kafkax.NewSink(ctx, broker, kafkax.ToTopic(topics[0]))
	defer sink.Close()
	err := sink.Write(ctx, []kafkax.Out{{Value: []byte("a")}, {Value: []byte("b")}})
	fmt.Println(err, exampleRead(topics[0], 2, ""))
	// Output:
	// <nil> [a b]
}

// ProduceBatches takes batches made upstream, one produce round trip each.
func ExampleProduceBatches() {
	topics := exampleTopics("batches")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sink, _ := kafkax.NewSink(ctx, broker, kafkax.ToTopic(topics[0]), kafkax.SinkWorkers(1))
	defer sink.Close()
	p := sluice.New(ctx)
	batches := sluice.FromSlice(p, "batches", [][]kafkax.Out{
		{{Value: []byte("1")}, {Value: []byte("2")}},
		{{Value: []byte("3")}},
	})
	kafkax.ProduceBatches(p, "write", batches, sink)
	fmt.Println(p.Wait(), exampleRead(topics[0], 3, ""))
	// Output:
	// <nil> [1 2 3]
}

// A record that fails every attempt goes to the dead-letter topic with the
// error in a header; its neighbours are stored and committed.
func ExampleDeadLetterTo() {
	topics := exampleTopics("payments", "ok", "dead")
	exampleProduce(topics[0], "10", "x", "30")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// One write at a time: the records are stored in the order read.
	sink, _ := kafkax.NewSink(ctx, broker, kafkax.ToTopic(topics[1]), kafkax.SinkWorkers(1))
	defer sink.Close()
	src, _ := kafkax.NewSource(ctx, broker, "payer", topics[:1], kafkax.StopWhenCaughtUp(),
		kafkax.Redeliver(2, 10*time.Millisecond), kafkax.DeadLetterTo(sink, topics[2]))
	defer src.Close()
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
	fmt.Println(exampleRead(topics[1], 2, ""), exampleRead(topics[2], 1, kafkax.HeaderError))
	// Output:
	// [10 30] [x | kafkax-error=not a number]
}

// DeadLetterOut builds the dead-letter record of a failed one, to produce
// with the rest of a pipeline's output.
func ExampleDeadLetterOut() {
	var failed kafkax.Msg // from a Source, in a real pipeline
	o := kafkax.DeadLetterOut(failed, "orders.dead", errors.New("unreadable"))
	fmt.Println(o.Topic)
	// Output:
	// orders.dead
}

// MaxInFlight bounds what the pipeline holds: with a slow stage, fetching
// pauses whenever 10 records are unsettled.
func ExampleMaxInFlight() {
	topics := exampleTopics("ticks")
	exampleProduce(topics[0], strings.Fields(strings.Repeat("t ", 50))...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, err := kafkax.NewSource(ctx, broker, "ticker", topics, kafkax.MaxInFlight(10),
		kafkax.CommitEvery(100*time.Millisecond), kafkax.StopWhenCaughtUp())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	most := int64(0)
	p := sluice.New(ctx)
	sluice.ForEach(p, "slow", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg) error {
		most = max(most, src.Stats().InFlight)
		time.Sleep(time.Millisecond)
		return nil // ForEach acknowledges m
	})
	err = p.Wait()
	st := src.Stats()
	fmt.Println(err, st.Acked, "settled; at most", most, "in flight")
	// Output:
	// <nil> 50 settled; at most 10 in flight
}

// WithClient passes franz-go options (TLS, SASL, timeouts) to the client a
// Source or Sink creates.
func ExampleWithClient() {
	sink, err := kafkax.NewSink(context.Background(), broker,
		kafkax.WithClient(kgo.ClientID("billing"), kgo.DialTimeout(2*time.Second)))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sink.Close()
	fmt.Println("connected")
	// Output:
	// connected
}

// Redeliver: a record that fails is emitted again, here until its third
// delivery succeeds; nothing is dead-lettered.
func ExampleRedeliver() {
	topics := exampleTopics("flaky")
	exampleProduce(topics[0], "flaky")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, _ := kafkax.NewSource(ctx, broker, "retrier", topics, kafkax.Redeliver(3, 10*time.Millisecond),
		kafkax.StopWhenCaughtUp())
	defer src.Close()
	p := sluice.New(ctx)
	sluice.ForEach(p, "work", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg) error {
		fmt.Println("delivery", m.Delivery())
		if m.Delivery() < 3 {
			m.Fail(errors.New("try again"))
		}
		return nil // ForEach acknowledges m, unless it failed
	})
	fmt.Println(p.Wait(), src.Stats().Acked, "settled")
	// Output:
	// delivery 1
	// delivery 2
	// delivery 3
	// <nil> 1 settled
}

// StopWhenCaughtUp ends the stream once the group has committed everything,
// so that a batch job's pipeline returns by itself.
func ExampleStopWhenCaughtUp() {
	topics := exampleTopics("batchjob")
	exampleProduce(topics[0], "a", "b")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, _ := kafkax.NewSource(ctx, broker, "batchjob", topics, kafkax.StopWhenCaughtUp())
	defer src.Close()
	p := sluice.New(ctx)
	sluice.ForEach(p, "ack", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg) error {
		return nil // ForEach acknowledges m
	})
	fmt.Println(p.Wait(), src.Stats().Acked, "settled")
	// Output:
	// <nil> 2 settled
}

// CommitEvery sets how often franz-go commits the settled prefixes; here
// every 100 ms.
func ExampleCommitEvery() {
	topics := exampleTopics("counted")
	exampleProduce(topics[0], strings.Fields(strings.Repeat("x ", 30))...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src, _ := kafkax.NewSource(ctx, broker, "counter", topics, kafkax.CommitEvery(100*time.Millisecond),
		kafkax.StopWhenCaughtUp())
	defer src.Close()
	p := sluice.New(ctx)
	sluice.ForEach(p, "ack", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg) error {
		return nil // ForEach acknowledges m
	})
	fmt.Println(p.Wait(), "committed:", src.Stats().Commits > 0)
	// Output:
	// <nil> committed: true
}

// exampleSink produces values through a sink made with opts and prints
// what the topic then holds. The sink writes one call at a time unless
// opts say otherwise, so that the values are stored in order.
func exampleSink(name string, opts ...kafkax.SinkOption) {
	topics := exampleTopics(name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts = append([]kafkax.SinkOption{kafkax.SinkWorkers(1), kafkax.ToTopic(topics[0])}, opts...)
	sink, err := kafkax.NewSink(ctx, broker, opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sink.Close()
	p := sluice.New(ctx)
	kafkax.Produce(p, "write", sluice.FromSlice(p, "outs", []kafkax.Out{{Value: []byte("x")}, {Value: []byte("y")}}), sink)
	fmt.Println(p.Wait(), exampleRead(topics[0], 2, ""))
}

// ToTopic names the topic of records whose Out.Topic is empty.
func ExampleToTopic() {
	exampleSink("to")
	// Output:
	// <nil> [x y]
}

// SinkWorkers sets how many batches are in flight at once.
func ExampleSinkWorkers() {
	exampleSink("workers", kafkax.SinkWorkers(1))
	// Output:
	// <nil> [x y]
}

// DeliveryTimeout bounds how long the producer retries a record.
func ExampleDeliveryTimeout() {
	exampleSink("timeout", kafkax.DeliveryTimeout(10*time.Second))
	// Output:
	// <nil> [x y]
}
