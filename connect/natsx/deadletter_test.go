package natsx_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// deadMessages reads the messages of stream DEAD.
func deadMessages(t *testing.T, js jetstream.JetStream) []jetstream.Msg {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	c, err := js.OrderedConsumer(ctx, "DEAD", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Fetch(100, jetstream.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var ms []jetstream.Msg
	for m := range b.Messages() {
		ms = append(ms, m)
	}
	return ms
}

func TestPoisonMessageIsDeadLetteredAndEveryNeighbourStored(t *testing.T) {
	js := serverWith(t, "IN", "OUT", "DEAD")
	const n = 3000
	const poison = "1234"
	publishN(t, js, "in.x", n)
	src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "poison",
		natsx.Redeliver(3, 10*time.Millisecond), natsx.DeadLetterTo("dead.in"),
		natsx.StopWhenCaughtUp(), natsx.IdleCheck(50*time.Millisecond))
	sink := newSink(t, ctxT(t, 5*time.Second), js, natsx.ToStream("OUT"))

	tries := 0
	p := sluice.New(ctxT(t, time.Minute))
	outs := sluice.FlatMap(p, "decode", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg, emit func(natsx.Out) bool) error {
		if string(m.Data()) == poison {
			tries++
			// Settle the one message rather than fail the run.
			m.Fail(errors.New("cannot decode " + poison))
			return nil
		}
		emit(natsx.Out{Subject: "out." + m.ID(), Data: m.Data(), ID: m.ID(), From: m.Receipt})
		return nil
	})
	natsx.Publish(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if tries != 3 {
		t.Errorf("the poison message was processed %d times; want 3", tries)
	}
	ids, _ := storedIDs(t, js, "OUT")
	ids[poison] = 1
	checkEvery(t, ids, n)
	dead := deadMessages(t, js)
	if len(dead) != 1 || string(dead[0].Data()) != poison {
		t.Fatalf("dead-letter stream holds %d messages; want the poison message once", len(dead))
	}
	h := dead[0].Headers()
	if !strings.Contains(h.Get(natsx.HeaderError), "cannot decode") || h.Get(natsx.HeaderStream) != "IN" ||
		h.Get(natsx.HeaderDeliveries) != "3" || h.Get(natsx.HeaderStreamSeq) != "1235" {
		t.Errorf("dead-letter headers %v", h)
	}
	if st := src.Stats(); st.Parked != 1 || st.InFlight != 0 {
		t.Errorf("source stats %+v; want 1 dead-lettered, none in flight", st)
	}
	if ci := consumerState(t, js, "IN", "poison"); ci.NumPending != 0 || ci.NumAckPending != 0 {
		t.Fatalf("consumer: %d pending, %d awaiting ack; want 0, 0", ci.NumPending, ci.NumAckPending)
	}
}

// holdOne runs a pipeline over IN that acknowledges every message but
// "7", which it never settles (as a worker that died holding it would:
// Expect(2) leaves a hold that nothing settles), and
// returns Wait's result once stop says so or the pipeline fails.
func holdOne(t *testing.T, js jetstream.JetStream, stop func(*natsx.Source) bool, opts ...natsx.SourceOption) (*natsx.Source, error) {
	t.Helper()
	opts = append([]natsx.SourceOption{natsx.Redeliver(2, 0), natsx.AckWait(200 * time.Millisecond), natsx.IdleCheck(50 * time.Millisecond)}, opts...)
	src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", opts...)
	ctx, cancel := context.WithCancel(ctxT(t, time.Minute))
	defer cancel()
	p := sluice.New(ctx)
	sluice.ForEach(p, "work", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) error {
		if string(m.Data()) == "7" {
			m.Expect(2)
		}
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	for {
		select {
		case err := <-done:
			return src, err
		case <-time.After(20 * time.Millisecond):
			if stop(src) {
				cancel()
				err := <-done
				if errors.Is(err, context.Canceled) {
					err = nil
				}
				return src, err
			}
		}
	}
}

func TestMaxDeliverGiveUpFailsTheRunNamingTheMessage(t *testing.T) {
	js := serverWith(t, "IN")
	publishN(t, js, "in.x", 20)
	src, err := holdOne(t, js, func(*natsx.Source) bool { return false })
	if err == nil || !strings.Contains(err.Error(), "stream sequence 8") || !strings.Contains(err.Error(), "MaxDeliver") {
		t.Fatalf("Wait: %v; want the server's give-up on stream sequence 8 reported", err)
	}
	if st := src.Stats(); st.GaveUp != 1 {
		t.Fatalf("stats %+v; want 1 given up", st)
	}
}

func TestMaxDeliverGiveUpIsDeadLettered(t *testing.T) {
	js := serverWith(t, "IN", "DEAD")
	publishN(t, js, "in.x", 20)
	src, err := holdOne(t, js, func(s *natsx.Source) bool { return s.Stats().Parked > 0 }, natsx.DeadLetterTo("dead.in"))
	if err != nil {
		t.Fatal(err)
	}
	dead := deadMessages(t, js)
	if len(dead) != 1 || string(dead[0].Data()) != "7" {
		t.Fatalf("dead-letter stream holds %d messages; want message 7 once", len(dead))
	}
	if h := dead[0].Headers(); !strings.Contains(h.Get(natsx.HeaderError), "MaxDeliver") || h.Get(natsx.HeaderStreamSeq) != "8" {
		t.Errorf("dead-letter headers %v", h)
	}
	if st := src.Stats(); st.GaveUp != 1 {
		t.Errorf("stats %+v; want 1 given up", st)
	}
}

// DeadLetterTo needs a bound on deliveries: without one a failing message
// would be naked forever and never reach the dead-letter subject.
func TestDeadLetterToWithoutABoundOnDeliveriesIsRefused(t *testing.T) {
	js := serverWith(t, "IN")
	_, err := natsx.NewSource(ctxT(t, 5*time.Second), js, "IN", "c", natsx.DeadLetterTo("dead.in"))
	wantErr(t, err, nil, "natsx: source IN/c", "DeadLetterTo needs a bound on deliveries")
}

// TestMaxDeliverGiveUpIsCountedOnceWhenPipelinesShareTheSource: a Source
// may be read by several pipelines at once; the server's one advisory
// about a message it gave up on is one message given up, dead-lettered
// once, not once per pipeline.
func TestMaxDeliverGiveUpIsCountedOnceWhenPipelinesShareTheSource(t *testing.T) {
	js := serverWith(t, "IN", "DEAD")
	publishN(t, js, "in.x", 20)
	src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", natsx.Redeliver(2, 0),
		natsx.AckWait(200*time.Millisecond), natsx.IdleCheck(50*time.Millisecond), natsx.DeadLetterTo("dead.in"))
	ctx, cancel := context.WithCancel(ctxT(t, time.Minute))
	defer cancel()
	var done []chan error
	for range 2 {
		p := sluice.New(ctx)
		sluice.ForEach(p, "work", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) error {
			if string(m.Data()) == "7" {
				m.Expect(2) // held, as by a worker that died
			}
			return nil
		})
		d := make(chan error, 1)
		go func() { d <- p.Wait() }()
		done = append(done, d)
	}
	deadline := time.Now().Add(20 * time.Second)
	for src.Stats().Parked == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // time for a second advisory, were there one
	cancel()
	for _, d := range done {
		if err := <-d; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	if st := src.Stats(); st.GaveUp != 1 || st.Parked != 1 {
		t.Fatalf("stats %+v; want 1 given up and 1 dead-lettered", st)
	}
	if dead := deadMessages(t, js); len(dead) != 1 || string(dead[0].Data()) != "7" {
		t.Fatalf("dead-letter stream holds %d messages; want message 7 once", len(dead))
	}
}
