package natsx_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

// A pipeline that reads orders from one stream, upper-cases them and
// publishes them to another; each order is acknowledged once its result
// is stored.
func Example() {
	dir, _ := os.MkdirTemp("", "natsx-example-")
	defer os.RemoveAll(dir)
	srv, url, err := natsembed.Start(dir, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer natsembed.Stop(srv)
	nc, err := natsx.Connect(url)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	js.CreateStream(ctx, jetstream.StreamConfig{Name: "LOUD", Subjects: []string{"loud.>"}})
	for _, o := range []string{"tea", "cake", "jam"} {
		js.Publish(ctx, "orders.new", []byte(o), jetstream.WithMsgID("order-"+o))
	}

	src, err := natsx.NewSource(ctx, js, "ORDERS", "shouter", natsx.StopWhenCaughtUp(), natsx.IdleCheck(20*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
	// One write at a time: the messages are stored in the order read.
	sink, err := natsx.NewSink(ctx, js, natsx.ToStream("LOUD"), natsx.SinkWorkers(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sink.Close()
	p := sluice.New(ctx)
	msgs := natsx.Read(p, "read", src)
	outs := sluice.Map(p, "shout", msgs, 1, func(_ context.Context, m natsx.Msg) (natsx.Out, error) {
		return natsx.Out{Subject: "loud.orders", Data: []byte(strings.ToUpper(string(m.Data()))), ID: m.ID(), From: m.Receipt}, nil
	})
	natsx.Publish(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}

	loud, _ := js.Stream(ctx, "LOUD")
	for seq := uint64(1); seq <= 3; seq++ {
		m, _ := loud.GetMsg(ctx, seq)
		fmt.Println(m.Header.Get(jetstream.MsgIDHeader), string(m.Data))
	}
	fmt.Printf("acknowledged %d, in flight %d\n", src.Stats().Acked, src.Stats().InFlight)
	// Output:
	// order-tea TEA
	// order-cake CAKE
	// order-jam JAM
	// acknowledged 3, in flight 0
}

// Connect reports an unreachable server at once, naming it.
func ExampleConnect() {
	_, err := natsx.Connect("nats://127.0.0.1:1")
	fmt.Println(err)
	// Output:
	// natsx: connect to nats://127.0.0.1:1: nats: no servers available for connection
}

// NewSource reports a missing stream, naming it.
func ExampleNewSource() {
	js, ctx, stop := exampleServer() // a server with no stream
	defer stop()
	_, err := natsx.NewSource(ctx, js, "MISSING", "reader")
	fmt.Println(err)
	// Output:
	// natsx: source stream "MISSING": nats: API error: code=404 err_code=10059 description=stream not found
}

// A message that fails is delivered again, and dead-lettered when it fails
// on its second delivery, with the error in a header; the run goes on and
// its neighbours are acknowledged.
func ExampleDeadLetterTo() {
	// A server with the streams ORDERS (orders.>) and DEAD (dead.>), and
	// three orders.
	js, ctx, stop := exampleServer("ORDERS", "DEAD")
	defer stop()
	for _, o := range []string{"tea", "???", "jam"} {
		js.Publish(ctx, "orders.new", []byte(o))
	}

	src, _ := natsx.NewSource(ctx, js, "ORDERS", "checker", natsx.Redeliver(2, 0), natsx.DeadLetterTo("dead.orders"),
		natsx.StopWhenCaughtUp(), natsx.IdleCheck(20*time.Millisecond))
	p := sluice.New(ctx)
	sluice.ForEach(p, "check", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) error {
		if string(m.Data()) == "???" {
			// Settled as failed: ForEach's acknowledgement then does nothing.
			m.Fail(fmt.Errorf("unreadable order %q", m.Data()))
		}
		return nil // acknowledged by ForEach
	})
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	dead, _ := js.Stream(ctx, "DEAD")
	m, _ := dead.GetMsg(ctx, 1)
	fmt.Println(string(m.Data), "|", m.Header.Get(natsx.HeaderError), "| deliveries", m.Header.Get(natsx.HeaderDeliveries))
	fmt.Printf("acknowledged %d, dead-lettered %d\n", src.Stats().Acked, src.Stats().Parked)
	// Output:
	// ??? | unreadable order "???" | deliveries 2
	// acknowledged 2, dead-lettered 1
}

// DeadLetterOut builds the dead-letter message of a failed one, to publish
// with the rest of a pipeline's output.
func ExampleDeadLetterOut() {
	var failed natsx.Msg // from a Source, in a real pipeline
	o := natsx.DeadLetterOut(failed, "dead.orders", fmt.Errorf("unreadable"))
	fmt.Println(o.Subject)
	// Output:
	// dead.orders
}

// Sink.Write in a sink stage of your own, to do something once a chunk is
// stored (count it, here); the stage acknowledges the chunk's From
// receipts after the function returns nil, as Publish does.
func ExampleSink_Write() {
	js, ctx, stop := exampleServer("ORDERS", "COPIES")
	defer stop()
	for _, o := range []string{"tea", "cake", "jam"} {
		js.Publish(ctx, "orders.new", []byte(o))
	}

	src, _ := natsx.NewSource(ctx, js, "ORDERS", "copier", natsx.StopWhenCaughtUp(), natsx.IdleCheck(20*time.Millisecond))
	sink, _ := natsx.NewSink(ctx, js, natsx.ToStream("COPIES"))
	defer sink.Close()
	p := sluice.New(ctx)
	outs := sluice.Map(p, "copy", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) (natsx.Out, error) {
		return natsx.Out{Subject: "copies.orders", Data: m.Data(), ID: m.ID(), From: m.Receipt}, nil
	})
	stored := 0 // one worker: no lock needed
	sluice.ForEachChunk(p, "write", outs, 1, func(ctx context.Context, chunk []natsx.Out) error {
		if err := sink.Write(ctx, chunk); err != nil {
			return err
		}
		stored += len(chunk)
		return nil
	}, sluice.Retry(3, 10*time.Millisecond, 100*time.Millisecond))
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("stored %d, acknowledged %d\n", stored, src.Stats().Acked)
	// Output:
	// stored 3, acknowledged 3
}

// exampleServer starts an embedded server with a stream for each name,
// holding the subjects "<name in lower case>.>", and connects to it. It
// returns a JetStream, a context for the example, and what stops it all.
func exampleServer(streams ...string) (jetstream.JetStream, context.Context, func()) {
	dir, _ := os.MkdirTemp("", "natsx-example-")
	srv, url, _ := natsembed.Start(dir, 0)
	nc, _ := natsx.Connect(url)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	for _, name := range streams {
		js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}})
	}
	return js, ctx, func() {
		cancel()
		nc.Close()
		natsembed.Stop(srv)
		os.RemoveAll(dir)
	}
}

// A Propagator reads and writes a NATS message's headers through
// HeaderCarrier; Propagate does this for a Source's and a Sink's
// messages.
func ExampleHeaderCarrier() {
	h := nats.Header{}
	c := natsx.HeaderCarrier(h)
	c.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	fmt.Println(h.Get("traceparent"))
	fmt.Println(c.Keys())
	// Output:
	// 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
	// [traceparent]
}
