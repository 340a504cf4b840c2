package natsx_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

// embedded starts a server with its store in a fresh temporary directory,
// stopped when the test ends.
func embedded(t *testing.T) (*server.Server, string, string) {
	t.Helper()
	dir := t.TempDir()
	s, url, err := natsembed.Start(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { natsembed.Stop(s) })
	return s, url, dir
}

// serverWith starts a server (see embedded), makes a file-backed stream
// for each name, holding the subjects "<name in lower case>.>", and
// returns a JetStream on it.
func serverWith(t *testing.T, streams ...string) jetstream.JetStream {
	t.Helper()
	_, url, _ := embedded(t)
	_, js := connect(t, url)
	for _, name := range streams {
		makeStream(t, js, name, strings.ToLower(name)+".>")
	}
	return js
}

// newSource is natsx.NewSource, failing the test on an error.
func newSource(t *testing.T, ctx context.Context, js jetstream.JetStream, stream, durable string, opts ...natsx.SourceOption) *natsx.Source {
	t.Helper()
	src, err := natsx.NewSource(ctx, js, stream, durable, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// newSink is natsx.NewSink, failing the test on an error; the sink is
// closed when the test ends.
func newSink(t *testing.T, ctx context.Context, js jetstream.JetStream, opts ...natsx.SinkOption) *natsx.Sink {
	t.Helper()
	sink, err := natsx.NewSink(ctx, js, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sink.Close)
	return sink
}

// connect opens a connection closed when the test ends (before the server
// stops: cleanups run last-in first-out).
func connect(t *testing.T, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := natsx.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// makeStream creates a file-backed stream holding subjects.
func makeStream(t *testing.T, js jetstream.JetStream, name string, subjects ...string) {
	t.Helper()
	_, err := js.CreateStream(ctxT(t, 5*time.Second), jetstream.StreamConfig{
		Name: name, Subjects: subjects, Storage: jetstream.FileStorage,
	})
	if err != nil {
		t.Fatal(err)
	}
}

// publishN stores n messages "0".."n-1" on subject, each with its number as
// Nats-Msg-Id.
func publishN(t *testing.T, js jetstream.JetStream, subject string, n int) {
	t.Helper()
	for i := range n {
		id := strconv.Itoa(i)
		if _, err := js.PublishAsync(subject, []byte(id), jetstream.WithMsgID(id)); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 || i == n-1 {
			// Wait for the server to catch up, rather than let nats.go
			// stall the publisher.
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(30 * time.Second):
				t.Fatal("publishing the input took over 30s")
			}
		}
	}
	if p := js.PublishAsyncPending(); p != 0 {
		t.Fatalf("%d input messages not acknowledged", p)
	}
}

// storedIDs reads every message of stream and counts them by Nats-Msg-Id.
func storedIDs(t *testing.T, js jetstream.JetStream, stream string) (map[string]int, int) {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := int(info.State.Msgs)
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ids := make(map[string]int, total)
	for got := 0; got < total; {
		b, err := c.Fetch(min(1000, total-got), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for m := range b.Messages() {
			ids[m.Headers().Get(jetstream.MsgIDHeader)]++
			n++
		}
		if err := b.Error(); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("read %d of the %d messages of %s, then nothing", got, total, stream)
		}
		got += n
	}
	return ids, total
}

// checkEvery checks that ids holds "0".."n-1" exactly once each and
// nothing else.
func checkEvery(t *testing.T, ids map[string]int, n int) {
	t.Helper()
	missing, dup := 0, 0
	for i := range n {
		switch ids[strconv.Itoa(i)] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	if missing > 0 || dup > 0 || len(ids) != n {
		t.Fatalf("output holds %d distinct IDs, %d of the %d inputs missing, %d stored more than once", len(ids), missing, n, dup)
	}
}

// consumerState returns the consumer's pending and ack-pending counts.
func consumerState(t *testing.T, js jetstream.JetStream, stream, durable string) *jetstream.ConsumerInfo {
	t.Helper()
	ctx := ctxT(t, 5*time.Second)
	c, err := js.Consumer(ctx, stream, durable)
	if err != nil {
		t.Fatal(err)
	}
	ci, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ci
}

// eventually polls cond every 5ms until it holds, failing after d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// publishOnce runs a pipeline that publishes outs through sink with the
// Publish stage's options opts, and returns Wait's error and the stage's
// stats.
func publishOnce(t *testing.T, sink *natsx.Sink, outs []natsx.Out, opts ...sluice.StageOption) (error, sluice.StageStats) {
	t.Helper()
	p := sluice.New(ctxT(t, time.Minute))
	// One chunk of every out, so one Write sees them all: with the
	// source's first chunks at one item, the sink's workers would split
	// them, and a rejection in one Write cancels the others.
	natsx.Publish(p, "publish", sluice.FromSlice(p, "outs", outs, sluice.Chunk(max(1, len(outs)))), sink, opts...)
	err := p.Wait()
	for _, s := range p.Stats().Stages {
		if s.Name == "publish" {
			return err, s
		}
	}
	t.Fatal("no publish stage in the pipeline's stats")
	return nil, sluice.StageStats{}
}
