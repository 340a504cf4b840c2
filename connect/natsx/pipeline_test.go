package natsx_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// copyPipeline reads src and publishes each message to out.<id> with the
// input's ID (or what stage makes of it, if not nil), with the Publish
// stage's options opts; the message is acknowledged after the store.
func copyPipeline(ctx context.Context, src *natsx.Source, sink *natsx.Sink, stage func(natsx.Msg) (natsx.Out, error), opts ...sluice.StageOption) *sluice.Pipeline {
	p := sluice.New(ctx)
	msgs := natsx.Read(p, "read", src)
	outs := sluice.Map(p, "copy", msgs, 2, func(_ context.Context, m natsx.Msg) (natsx.Out, error) {
		if stage != nil {
			return stage(m)
		}
		return natsx.Out{Subject: "out." + m.ID(), Data: m.Data(), ID: m.ID(), From: m.Receipt}, nil
	})
	natsx.Publish(p, "publish", outs, sink, opts...)
	return p
}

func TestEveryMessageIsStoredThenAcknowledged(t *testing.T) {
	js := serverWith(t, "IN", "OUT")
	const n = 5000
	publishN(t, js, "in.x", n)

	ctx := ctxT(t, 60*time.Second)
	src := newSource(t, ctx, js, "IN", "copy", natsx.StopWhenCaughtUp(), natsx.IdleCheck(100*time.Millisecond))
	sink := newSink(t, ctx, js, natsx.ToStream("OUT"))
	if err := copyPipeline(ctx, src, sink, nil).Wait(); err != nil {
		t.Fatal(err)
	}
	ids, total := storedIDs(t, js, "OUT")
	checkEvery(t, ids, n)
	st := src.Stats()
	if st.Acked != n || st.InFlight != 0 || st.Failed != 0 || st.HandedBack != 0 || sink.Stats().Published != n || total != n {
		t.Fatalf("source %+v, sink %+v, stored %d; want %d acked, none in flight", st, sink.Stats(), total, n)
	}
	if ci := consumerState(t, js, "IN", "copy"); ci.NumPending != 0 || ci.NumAckPending != 0 {
		t.Fatalf("consumer: %d pending, %d awaiting ack; want 0, 0", ci.NumPending, ci.NumAckPending)
	}
}

// A write that fails fails the run (no error option here), and the
// messages of its chunk are left unsettled, stored or not: none is
// acknowledged without its output stored, and the server delivers every
// one not acknowledged again after AckWait, so nothing is lost.
func TestUnstoredMessagesAreNeverAcknowledged(t *testing.T) {
	js := serverWith(t, "IN", "OUT")
	const n = 300
	publishN(t, js, "in.x", n)

	ctx := ctxT(t, 30*time.Second)
	src := newSource(t, ctx, js, "IN", "copy", natsx.AckWait(time.Second))
	sink := newSink(t, ctx, js)
	// Every 7th message goes to a subject no stream holds: the server
	// never stores it, so its input must stay unacknowledged.
	err := copyPipeline(ctx, src, sink, func(m natsx.Msg) (natsx.Out, error) {
		subj := "out." + m.ID()
		if seq, _ := m.Metadata(); seq.Sequence.Stream%7 == 0 {
			subj = "nowhere." + m.ID()
		}
		return natsx.Out{Subject: subj, Data: m.Data(), ID: m.ID(), From: m.Receipt}, nil
	}).Wait()
	if !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Fatalf("Wait: %v; want the sink's failure, wrapping %v", err, jetstream.ErrNoStreamResponse)
	}
	ids, _ := storedIDs(t, js, "OUT")
	st := src.Stats()
	if st.Acked > int64(len(ids)) || st.Acked == n {
		t.Fatalf("%d inputs acknowledged, %d outputs stored; every acknowledgement needs a stored output", st.Acked, len(ids))
	}

	// Everything not acknowledged comes back: a second run gets the rest.
	src2, err := natsx.NewSource(ctx, js, "IN", "copy", natsx.AckWait(time.Second), natsx.StopWhenCaughtUp(), natsx.IdleCheck(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	p := sluice.New(ctx)
	again := map[string]bool{}
	sluice.ForEach(p, "collect", natsx.Read(p, "read", src2), 1, func(_ context.Context, m natsx.Msg) error {
		again[m.ID()] = true
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := itoa(i)
		if (i+1)%7 == 0 && !again[id] {
			t.Fatalf("message %s, never stored, was not delivered again", id)
		}
		if ids[id] == 0 && !again[id] {
			t.Fatalf("message %s neither stored nor delivered again: lost", id)
		}
	}
	if int64(len(again)) != n-st.Acked {
		t.Fatalf("%d delivered again; want the %d not acknowledged", len(again), n-st.Acked)
	}
	t.Logf("stored %d, source %+v, delivered again %d", len(ids), st, len(again))
}

func TestMaxInFlightBoundsMessagesInFlight(t *testing.T) {
	js := serverWith(t, "IN")
	const n, limit = 2000, 50
	publishN(t, js, "in.x", n)

	ctx := ctxT(t, 60*time.Second)
	src := newSource(t, ctx, js, "IN", "slow", natsx.MaxInFlight(limit), natsx.FetchBatch(20),
		natsx.StopWhenCaughtUp(), natsx.IdleCheck(50*time.Millisecond))
	p := sluice.New(ctx)
	msgs := natsx.Read(p, "read", src)
	var most atomic.Int64
	sluice.ForEach(p, "slow-commit", msgs, 1, func(_ context.Context, m natsx.Msg) error {
		if f := src.Stats().InFlight; f > most.Load() {
			most.Store(f)
		}
		if len(m.Data()) == 0 {
			return errors.New("empty message")
		}
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if st := src.Stats(); st.Acked != n {
		t.Fatalf("acked %d of %d", st.Acked, n)
	}
	if got := most.Load(); got > limit {
		t.Fatalf("%d messages in flight at once; MaxInFlight is %d", got, limit)
	}
	t.Logf("at most %d in flight", most.Load())
}

func TestFailNaksWithDelayAndTheMessageComesBack(t *testing.T) {
	js := serverWith(t, "IN")
	const n = 100
	publishN(t, js, "in.x", n)

	ctx := ctxT(t, 30*time.Second)
	src := newSource(t, ctx, js, "IN", "retry", natsx.Redeliver(2, 20*time.Millisecond),
		natsx.StopWhenCaughtUp(), natsx.IdleCheck(50*time.Millisecond))
	p := sluice.New(ctx)
	seen := map[string]uint64{} // id → deliveries; one sink goroutine
	sluice.ForEach(p, "flaky", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) error {
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		seen[m.ID()] = md.NumDelivered
		if md.NumDelivered == 1 && md.Sequence.Stream%2 == 0 {
			m.Fail(errors.New("transient"))
		}
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	st := src.Stats()
	if st.Acked != n || st.Failed != n/2 || st.Redelivered != n/2 || st.Requeued != n/2 || st.Received != n+n/2 {
		t.Fatalf("source %+v; want %d acked, %d failed, naked and delivered again", st, n, n/2)
	}
	for id, d := range seen {
		if d > 2 {
			t.Fatalf("message %s delivered %d times", id, d)
		}
	}
}

// A message that fails on its last delivery is published to the
// DeadLetterTo subject and terminated: it never comes back.
func TestFailOnTheLastDeliveryDeadLettersAndTerminates(t *testing.T) {
	js := serverWith(t, "IN", "DEAD")
	const n = 100
	publishN(t, js, "in.x", n)

	ctx := ctxT(t, 30*time.Second)
	src := newSource(t, ctx, js, "IN", "poison", natsx.Redeliver(1, 0), natsx.DeadLetterTo("dead.in"),
		natsx.StopWhenCaughtUp(), natsx.IdleCheck(50*time.Millisecond))
	p := sluice.New(ctx)
	sluice.ForEach(p, "picky", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) error {
		if md, _ := m.Metadata(); md.Sequence.Stream%4 == 0 {
			m.Fail(errors.New("malformed"))
		}
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	st := src.Stats()
	if st.Received != n || st.Failed != n/4 || st.Parked != n/4 || st.Termed != n/4 || st.Acked != n-n/4 || st.Redelivered != 0 {
		t.Fatalf("source %+v; want %d delivered once each, %d dead-lettered and terminated", st, n, n/4)
	}
	if ci := consumerState(t, js, "IN", "poison"); ci.NumAckPending != 0 || ci.NumRedelivered != 0 {
		t.Fatalf("consumer: %d awaiting ack, %d redelivered; want 0, 0", ci.NumAckPending, ci.NumRedelivered)
	}
}

// Without DeadLetterTo, a message that fails on its last delivery is
// naked all the same: the server gives up on it, and the run fails naming
// it, so that its loss is not silent.
func TestFailOnTheLastDeliveryWithoutDeadLetterFailsTheRunNamingIt(t *testing.T) {
	js := serverWith(t, "IN")
	publishN(t, js, "in.x", 20)
	ctx := ctxT(t, 30*time.Second)
	src := newSource(t, ctx, js, "IN", "last", natsx.Redeliver(2, 0), natsx.IdleCheck(20*time.Millisecond))
	p := sluice.New(ctx)
	sluice.ForEach(p, "picky", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) error {
		if string(m.Data()) == "7" {
			m.Fail(errors.New("malformed"))
		}
		return nil
	})
	err := quickly(t, 15*time.Second, p.Wait)
	wantErr(t, err, nil, "stream sequence 8", "MaxDeliver", "DeadLetterTo")
	if st := src.Stats(); st.Failed != 2 || st.GaveUp != 1 {
		t.Fatalf("source %+v; want 2 failed deliveries and 1 given up", st)
	}
}

func TestCancelStopsTheSourceAndHandsBackWhatItHolds(t *testing.T) {
	js := serverWith(t, "IN")
	const n = 3000
	publishN(t, js, "in.x", n)

	ctx, cancel := context.WithCancel(ctxT(t, 30*time.Second))
	src := newSource(t, ctx, js, "IN", "stop", natsx.AckWait(time.Minute))
	p := sluice.New(ctx)
	var acked atomic.Int64
	sluice.ForEach(p, "commit", natsx.Read(p, "read", src), 1, func(ctx context.Context, m natsx.Msg) error {
		if acked.Add(1) == 500 {
			cancel()
		}
		return nil
	})
	if err := p.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v; want %v", err, context.Canceled)
	}
	// A second source on the same consumer gets everything not acked:
	// what the first had fetched but not processed is redelivered at
	// once (naked), or after AckWait for what was lost inside the
	// stopped pipeline — here AckWait is long, so count only the first.
	st := src.Stats()
	if st.Acked < 500 || st.Acked >= n {
		t.Fatalf("source %+v after cancelling at 500", st)
	}
	t.Logf("after cancel: %+v", st)
}

func TestSinkGivesEachMessageItsOwnIDEvenWithASharedHeader(t *testing.T) {
	js := serverWith(t, "OUT")
	sink := newSink(t, ctxT(t, time.Minute), js, natsx.ToStream("OUT"))
	shared := nats.Header{"Origin": []string{"test"}}
	outs := []natsx.Out{
		{Subject: "out.a", Data: []byte("a"), Header: shared, ID: "0"},
		{Subject: "out.b", Data: []byte("b"), Header: shared, ID: "1"},
		{Subject: "out.b", Data: []byte("b again"), Header: shared, ID: "1"}, // a duplicate: stored once
		{Subject: "out.c", Data: []byte("c"), Header: shared, ID: "2"},
	}
	if err, _ := publishOnce(t, sink, outs); err != nil {
		t.Fatal(err)
	}
	ids, total := storedIDs(t, js, "OUT")
	checkEvery(t, ids, 3)
	if total != 3 || len(shared) != 1 {
		t.Fatalf("stored %d messages, shared header now %v; want 3 and the header untouched", total, shared)
	}
}

// A drain stops the source from fetching, and every message it had emitted
// is processed and acknowledged: Wait returns nil, nothing is left
// unsettled, and a second run gets exactly the rest.
func TestDrainStopsFetchingAndSettlesEverythingEmitted(t *testing.T) {
	js := serverWith(t, "IN")
	const n = 3000
	publishN(t, js, "in.x", n)

	ctx := ctxT(t, 60*time.Second)
	run := func(drainAt int64) (acked int64, st natsx.SourceStats) {
		// A short AckWait: messages the client had fetched when the
		// first run stopped come back to the second run soon.
		src, err := natsx.NewSource(ctx, js, "IN", "drain", natsx.AckWait(2*time.Second),
			natsx.StopWhenCaughtUp(), natsx.IdleCheck(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		p := sluice.New(ctx)
		var count atomic.Int64
		sluice.ForEach(p, "commit", natsx.Read(p, "read", src), 2, func(ctx context.Context, m natsx.Msg) error {
			if count.Add(1) == drainAt {
				p.Drain()
			}
			return nil
		})
		if err := p.Wait(); err != nil {
			t.Fatalf("Wait after a drain: %v", err)
		}
		return count.Load(), src.Stats()
	}
	first, st := run(500)
	if st.InFlight != 0 || st.Acked != first || first < 500 || first >= n {
		t.Fatalf("first run: %d processed, source %+v; want every emitted message acked, none in flight", first, st)
	}
	second, _ := run(-1)
	if first+second != n {
		t.Fatalf("first run %d + second run %d = %d, want %d: nothing lost, nothing twice", first, second, first+second, n)
	}
	t.Logf("first run %d (drained at 500), second run %d", first, second)
}
