package natsx_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

// BenchmarkCopy moves benchMsgs messages from stream IN to stream OUT —
// fetch, publish one message per input with its ID, wait for the server's
// acks, acknowledge the input — once with a hand-written nats.go loop and
// once with sluice (Read → Map → Publish), on the same embedded server in
// the same run. Each iteration starts from a freshly filled IN and an
// empty OUT, outside the timer, and checks that OUT holds every message.
func BenchmarkCopy(b *testing.B) {
	dir := b.TempDir()
	srv, url, err := natsembed.Start(dir, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer natsembed.Stop(srv)
	for _, storage := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		b.Run(storage.String(), func(b *testing.B) {
			b.Run("handloop", func(b *testing.B) { benchCopy(b, url, storage, copyByHand) })
			b.Run("sluice", func(b *testing.B) { benchCopy(b, url, storage, copyWithSluice) })
		})
	}
}

const benchMsgs = 20000

type copier func(ctx context.Context, js jetstream.JetStream, n int) error

func benchCopy(b *testing.B, url string, storage jetstream.StorageType, copy copier) {
	nc, err := natsx.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var copied time.Duration
	for b.Loop() {
		b.StopTimer()
		for _, s := range []string{"IN", "OUT"} {
			if err := js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				b.Fatal(err)
			}
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: s, Subjects: []string{lower(s) + ".>"}, Storage: storage}); err != nil {
				b.Fatal(err)
			}
		}
		fill(b, js, benchMsgs)
		b.StartTimer()
		start := time.Now()
		if err := copy(ctx, js, benchMsgs); err != nil {
			b.Fatal(err)
		}
		copied += time.Since(start)
		b.StopTimer()
		st, err := js.Stream(ctx, "OUT")
		if err != nil {
			b.Fatal(err)
		}
		if info, err := st.Info(ctx); err != nil || info.State.Msgs != benchMsgs {
			b.Fatalf("OUT holds %v messages (%v); want %d", info.State.Msgs, err, benchMsgs)
		}
		b.StartTimer()
	}
	per := float64(copied.Nanoseconds()) / float64(b.N*benchMsgs)
	b.ReportMetric(per, "ns/msg")
	b.ReportMetric(1e9/per, "msgs/s")
}

func lower(s string) string {
	if s == "IN" {
		return "in"
	}
	return "out"
}

func fill(b *testing.B, js jetstream.JetStream, n int) {
	for i := range n {
		id := strconv.Itoa(i)
		if _, err := js.PublishAsync("in.x", []byte("payload-"+id), jetstream.WithMsgID(id)); err != nil {
			b.Fatal(err)
		}
		if i%1000 == 999 || i == n-1 {
			<-js.PublishAsyncComplete()
		}
	}
}

// copyByHand is the loop a nats.go user would write: fetch a batch,
// publish its messages asynchronously, wait for every ack, acknowledge
// the inputs.
func copyByHand(ctx context.Context, js jetstream.JetStream, n int) error {
	cons, err := js.CreateOrUpdateConsumer(ctx, "IN", jetstream.ConsumerConfig{
		Durable: "hand", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: natsx.DefaultMaxInFlight,
	})
	if err != nil {
		return err
	}
	batch := make([]jetstream.Msg, 0, natsx.DefaultFetchBatch)
	for done := 0; done < n; {
		mb, err := cons.Fetch(natsx.DefaultFetchBatch, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return err
		}
		batch = batch[:0]
		for m := range mb.Messages() {
			id := m.Headers().Get(jetstream.MsgIDHeader)
			if _, err := js.PublishMsgAsync(&nats.Msg{Subject: "out.x", Data: m.Data(),
				Header: nats.Header{jetstream.MsgIDHeader: []string{id}}}); err != nil {
				return err
			}
			batch = append(batch, m)
		}
		if err := mb.Error(); err != nil {
			return err
		}
		<-js.PublishAsyncComplete()
		for _, m := range batch {
			if err := m.Ack(); err != nil {
				return err
			}
		}
		done += len(batch)
	}
	return nil
}

var errCopied = errors.New("copied")

// copyWithSluice is the same work as a pipeline: Read → Map (trivial) →
// Publish, stopped once the sink has committed n messages.
func copyWithSluice(ctx context.Context, js jetstream.JetStream, n int) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	src, err := natsx.NewSource(ctx, js, "IN", "sluice")
	if err != nil {
		return err
	}
	var committed atomic.Int64
	sink, err := natsx.NewSink(ctx, js)
	if err != nil {
		return err
	}
	defer sink.Close()
	p := sluice.New(ctx)
	outs := sluice.Map(p, "copy", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) (natsx.Out, error) {
		return natsx.Out{Subject: "out.x", Data: m.Data(), ID: m.ID(), From: m.Receipt}, nil
	})
	// Publish's stage, counting what is stored.
	sluice.ForEachChunk(p, "publish", outs, natsx.DefaultSinkWorkers, func(ctx context.Context, b []natsx.Out) error {
		if err := sink.Write(ctx, b); err != nil {
			return err
		}
		if committed.Add(int64(len(b))) >= int64(n) {
			cancel(errCopied)
		}
		return nil
	})
	if err := p.Wait(); !errors.Is(err, errCopied) {
		return err
	}
	return nil
}
