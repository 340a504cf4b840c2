package natsx_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

// The server gives up on a message (MaxDeliver) at one of these moments
// of a Source's life, and each test below makes it happen at one of them:
//
//   - during a Read: TestMaxDeliverGiveUpIsDeadLettered (deadletter_test.go);
//   - as a Read stops caught up: TestGiveUpAsACaughtUpReadStops*;
//   - on the messages a stopping Read hands back:
//     TestMessagesHandedBackOnTheirLastDelivery*;
//   - while no Read runs: TestGiveUpBetweenReads*, and across a server
//     restart: TestGiveUpIsKeptAcrossAServerRestart;
//   - before the first pull of a Read that then fails at once:
//     TestARunThatFailsAtOnceStillResolvesTheGiveUpsBeforeIt;
//   - on the first pull request of a Read: TestGiveUpAtTheStartOfAReadIsDeadLettered;
//   - all of them, again and again: TestCrashLoopOnAPoisonMessage*.
//
// In every case the message is dead-lettered, or, without DeadLetterTo,
// a run fails naming its stream sequence.

// accountedFor checks that each input "0".."n-1" was stored in OUT or
// dead-lettered to DEAD (or both: a message stored whose acknowledgement
// the failed run never sent may be given up on later) and returns how
// many were dead-lettered; a message dead-lettered twice fails the test.
func accountedFor(t *testing.T, js jetstream.JetStream, n int) (dead map[string]int) {
	t.Helper()
	out, _ := storedIDs(t, js, "OUT")
	deadIDs, _ := storedIDs(t, js, "DEAD")
	dead = make(map[string]int, len(deadIDs))
	for id, c := range deadIDs {
		if c != 1 {
			t.Errorf("%s dead-lettered %d times", id, c)
		}
		dead[strings.TrimPrefix(id, "dead:")] += c
	}
	missing := 0
	for i := range n {
		if out[itoa(i)] == 0 && dead[itoa(i)] == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d inputs neither stored (%d stored) nor dead-lettered (%d dead)", missing, n, len(out), len(dead))
	}
	return dead
}

// TestCrashLoopOnAPoisonMessageDeadLettersItAndLosesNothing runs a
// pipeline that fails whenever it meets a poison message, again and
// again, each run on a new Source (as a restarted process would) with
// StopWhenCaughtUp, until a run ends without an error: the server gives
// up on the poison message after its third delivery, and on whatever
// neighbours the failed runs handed back or abandoned three times; every
// one of them must be dead-lettered, and every other input stored.
func TestCrashLoopOnAPoisonMessageDeadLettersItAndLosesNothing(t *testing.T) {
	js := serverWith(t, "IN", "OUT", "DEAD")
	const n = 3000
	const poison = "1234"
	publishN(t, js, "in.x", n)
	ctx := ctxT(t, 2*time.Minute)
	sink := newSink(t, ctx, js, natsx.ToStream("OUT"))
	var runs int
	var gaveUp int64
	for runs = 1; ; runs++ {
		if runs > 12 {
			t.Fatalf("still failing after %d runs", runs-1)
		}
		src := newSource(t, ctx, js, "IN", "crash", natsx.Redeliver(3, 0), natsx.AckWait(300*time.Millisecond),
			natsx.FetchBatch(100), natsx.DeadLetterTo("dead.in"), natsx.StopWhenCaughtUp(), natsx.IdleCheck(20*time.Millisecond))
		p := copyPipeline(ctx, src, sink, func(m natsx.Msg) (natsx.Out, error) {
			if string(m.Data()) == poison {
				return natsx.Out{}, errors.New("poison")
			}
			return natsx.Out{Subject: "out." + m.ID(), Data: m.Data(), ID: m.ID(), From: m.Receipt}, nil
		})
		err := p.Wait()
		gaveUp += src.Stats().GaveUp
		t.Logf("run %d: %v; source %+v", runs, err, src.Stats())
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "poison") {
			t.Fatalf("run %d: %v; want the poison message's error", runs, err)
		}
	}
	dead := accountedFor(t, js, n)
	if dead[poison] != 1 {
		t.Fatalf("the poison message was dead-lettered %d times; want once (%d runs, %d advisories seen, dead %v)", dead[poison], runs, gaveUp, dead)
	}
	if ci := consumerState(t, js, "IN", "crash"); ci.NumPending != 0 || ci.NumAckPending != 0 {
		t.Fatalf("consumer: %d pending, %d awaiting ack; want 0, 0", ci.NumPending, ci.NumAckPending)
	}
	t.Logf("%d runs, %d advisories seen, %d dead-lettered", runs, gaveUp, len(dead))
}

// holdSeven reads IN with a pipeline that acknowledges every message but
// "7", which it holds unsettled (as a worker that died would), counting
// its deliveries in held; it returns the pipeline's result once stop
// says so (nil for a cancelled run) or the pipeline ends.
func holdSeven(t *testing.T, src *natsx.Source, held *atomic.Int64, stop func() bool) error {
	t.Helper()
	ctx, cancel := context.WithCancel(ctxT(t, time.Minute))
	defer cancel()
	p := sluice.New(ctx)
	sluice.ForEach(p, "work", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) error {
		if string(m.Data()) == "7" {
			held.Add(1)
			m.Expect(2) // a hold that nothing settles
		}
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	for {
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Millisecond):
			if stop() {
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					return err
				}
				return nil
			}
		}
	}
}

// The server gives up on the held message when its AckWait passes for
// the second time, and takes it off the consumer's pending count at the
// same moment: a Read that stops once caught up must not stop before
// the message is dead-lettered.
func TestGiveUpAsACaughtUpReadStopsIsDeadLettered(t *testing.T) {
	js := serverWith(t, "IN", "DEAD")
	publishN(t, js, "in.x", 20)
	src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", natsx.Redeliver(2, 0),
		natsx.AckWait(100*time.Millisecond), natsx.IdleCheck(10*time.Millisecond),
		natsx.StopWhenCaughtUp(), natsx.DeadLetterTo("dead.in"))
	var held atomic.Int64
	if err := holdSeven(t, src, &held, func() bool { return false }); err != nil {
		t.Fatal(err)
	}
	if dead := deadMessages(t, js); len(dead) != 1 || string(dead[0].Data()) != "7" {
		t.Fatalf("dead-letter stream holds %d messages; want message 7 once (source %+v)", len(dead), src.Stats())
	}
	if st := src.Stats(); st.Parked != 1 {
		t.Fatalf("source %+v; want 1 dead-lettered", st)
	}
}

// Without DeadLetterTo, the same give-up fails the run naming the
// message, rather than letting it end as caught up.
func TestGiveUpAsACaughtUpReadStopsFailsItWithoutDeadLetter(t *testing.T) {
	js := serverWith(t, "IN")
	publishN(t, js, "in.x", 20)
	src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", natsx.Redeliver(2, 0),
		natsx.AckWait(100*time.Millisecond), natsx.IdleCheck(10*time.Millisecond), natsx.StopWhenCaughtUp())
	var held atomic.Int64
	err := holdSeven(t, src, &held, func() bool { return false })
	wantErr(t, err, nil, "stream sequence 8", "MaxDeliver")
}

// A Read that stops hands back (naks) the messages it received and did
// not emit; with MaxDeliver 1 each of those was on its last delivery, so
// the server gives up on them, as it does on those the stopped pipeline
// abandoned once their AckWait passes — with no Read of the first run
// left to hear of it. The next Read must dead-letter every one.
func TestMessagesHandedBackOnTheirLastDeliveryAreDeadLetteredByTheNextRead(t *testing.T) {
	js := serverWith(t, "IN", "OUT", "DEAD")
	const n, batch = 1000, 50
	publishN(t, js, "in.x", n)
	opts := []natsx.SourceOption{natsx.Redeliver(1, 0), natsx.AckWait(200 * time.Millisecond),
		natsx.FetchBatch(batch), natsx.DeadLetterTo("dead.in"), natsx.IdleCheck(20 * time.Millisecond)}

	ctx, cancel := context.WithCancel(ctxT(t, time.Minute))
	defer cancel()
	src := newSource(t, ctx, js, "IN", "last", opts...)
	p := sluice.New(ctx)
	// The only worker holds the first message until the run stops, so
	// the source has received messages it has not emitted.
	sluice.ForEach(p, "hold", natsx.Read(p, "read", src), 1, func(ctx context.Context, m natsx.Msg) error {
		<-ctx.Done()
		return ctx.Err()
	})
	eventually(t, 10*time.Second, "messages received and not emitted", func() bool {
		return consumerState(t, js, "IN", "last").NumAckPending > int(src.Stats().Received)+batch+1
	})
	cancel()
	if err := p.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v; want %v", err, context.Canceled)
	}
	// Time for the AckWait of the messages the stopped pipeline holds to
	// pass with no Read running.
	time.Sleep(500 * time.Millisecond)
	first := src.Stats()
	if first.HandedBack == 0 {
		t.Fatalf("first run %+v; want messages handed back", first)
	}

	src2 := newSource(t, ctxT(t, 5*time.Second), js, "IN", "last", append(opts, natsx.StopWhenCaughtUp())...)
	sink := newSink(t, ctxT(t, 5*time.Second), js, natsx.ToStream("OUT"))
	if err := quickly(t, 30*time.Second, copyPipeline(ctxT(t, time.Minute), src2, sink, nil).Wait); err != nil {
		t.Fatal(err)
	}
	dead := accountedFor(t, js, n)
	if int64(len(dead)) < first.Received {
		t.Fatalf("%d dead-lettered; want at least the %d the first run received (first run %+v, second %+v)", len(dead), first.Received, first, src2.Stats())
	}
}

// heldAfterTheRest stops holdSeven once message 7 has been delivered
// deliveries times and every other message acknowledged, so that the
// stopping Read hands nothing back.
func heldAfterTheRest(src *natsx.Source, held *atomic.Int64, deliveries int64) func() bool {
	return func() bool { return held.Load() == deliveries && src.Stats().Acked == 19 }
}

// With MaxDeliver 1 the server gives up on a held message as soon as its
// AckWait passes, with no Read running (the run holding it was
// cancelled): the next Read dead-letters it.
func TestGiveUpBetweenReadsIsDeadLetteredByTheNextRead(t *testing.T) {
	js := serverWith(t, "IN", "DEAD")
	publishN(t, js, "in.x", 20)
	opts := []natsx.SourceOption{natsx.Redeliver(1, 0), natsx.AckWait(100 * time.Millisecond),
		natsx.IdleCheck(10 * time.Millisecond), natsx.DeadLetterTo("dead.in")}
	src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", opts...)
	var held atomic.Int64
	if err := holdSeven(t, src, &held, heldAfterTheRest(src, &held, 1)); err != nil {
		t.Fatal(err)
	}
	waitGivenUp(t, js, "IN", "hold")
	if st := src.Stats(); st.Parked != 0 || st.HandedBack != 0 {
		t.Fatalf("first run %+v; want nothing dead-lettered or handed back", st)
	}

	src2 := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", append(opts, natsx.StopWhenCaughtUp())...)
	if err := holdSeven(t, src2, &held, func() bool { return false }); err != nil {
		t.Fatal(err)
	}
	if dead := deadMessages(t, js); len(dead) != 1 || string(dead[0].Data()) != "7" {
		t.Fatalf("dead-letter stream holds %d messages; want message 7 once (second run %+v)", len(dead), src2.Stats())
	}
}

// Without DeadLetterTo, the next Read fails naming the message the server
// gave up on while no Read ran; it reports it once: the Read after it
// runs to its end.
func TestGiveUpBetweenReadsFailsTheNextReadOnceWithoutDeadLetter(t *testing.T) {
	js := serverWith(t, "IN")
	publishN(t, js, "in.x", 20)
	opts := []natsx.SourceOption{natsx.Redeliver(1, 0), natsx.AckWait(100 * time.Millisecond), natsx.IdleCheck(10 * time.Millisecond)}
	src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", opts...)
	var held atomic.Int64
	if err := holdSeven(t, src, &held, heldAfterTheRest(src, &held, 1)); err != nil {
		t.Fatal(err)
	}
	waitGivenUp(t, js, "IN", "hold")

	src2 := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", append(opts, natsx.StopWhenCaughtUp())...)
	err := holdSeven(t, src2, &held, func() bool { return false })
	wantErr(t, err, nil, "stream sequence 8", "MaxDeliver")

	src3 := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", append(opts, natsx.StopWhenCaughtUp())...)
	if err := holdSeven(t, src3, &held, func() bool { return false }); err != nil {
		t.Fatalf("the run after the one that reported the give-up: %v", err)
	}
}

// A message naked on its last delivery while no pull request waits stays
// on the consumer's redelivery queue: the server gives up on it when the
// next Read's first pull request arrives. That Read dead-letters it.
func TestGiveUpAtTheStartOfAReadIsDeadLettered(t *testing.T) {
	js := serverWith(t, "IN", "DEAD")
	publishN(t, js, "in.x", 20)
	opts := []natsx.SourceOption{natsx.Redeliver(1, 0), natsx.AckWait(time.Minute),
		natsx.IdleCheck(10 * time.Millisecond), natsx.DeadLetterTo("dead.in"), natsx.StopWhenCaughtUp()}
	src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "nak", opts...)
	// Another client of the consumer takes every message in one fetch
	// (no pull request left waiting), acknowledges all but 7 and naks 7.
	b, err := src.Consumer().Fetch(20, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		if string(m.Data()) == "7" {
			err = m.Nak()
		} else {
			err = m.DoubleAck(ctxT(t, 5*time.Second))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if ci := consumerState(t, js, "IN", "nak"); ci.NumAckPending != 1 || ci.NumPending != 0 {
		t.Fatalf("consumer: %d pending, %d awaiting ack; want message 7 awaiting ack", ci.NumPending, ci.NumAckPending)
	}

	var held atomic.Int64
	if err := holdSeven(t, src, &held, func() bool { return false }); err != nil {
		t.Fatal(err)
	}
	if dead := deadMessages(t, js); len(dead) != 1 || string(dead[0].Data()) != "7" || held.Load() != 0 {
		t.Fatalf("dead-letter stream holds %d messages, message 7 delivered to the pipeline %d times; want it dead-lettered once, never delivered (source %+v)",
			len(dead), held.Load(), src.Stats())
	}
}

// waitGivenUp waits until the consumer has nothing pending or awaiting
// acknowledgement: the server has given up on what was held.
func waitGivenUp(t *testing.T, js jetstream.JetStream, stream, durable string) {
	t.Helper()
	var ci *jetstream.ConsumerInfo
	deadline := time.Now().Add(10 * time.Second)
	for {
		ci = consumerState(t, js, stream, durable)
		if ci.NumAckPending == 0 && ci.NumPending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer %s/%s after 10s: %d pending, %d awaiting ack, %d redelivered, ack floor %+v, delivered %+v",
				stream, durable, ci.NumPending, ci.NumAckPending, ci.NumRedelivered, ci.AckFloor, ci.Delivered)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// givenUpBetweenReads makes the server give up on message 7 of IN's 20
// while no Read runs (see TestGiveUpBetweenReadsIsDeadLetteredByTheNextRead),
// with source options opts, and returns the first run's source.
func givenUpBetweenReads(t *testing.T, js jetstream.JetStream, opts ...natsx.SourceOption) *natsx.Source {
	t.Helper()
	publishN(t, js, "in.x", 20)
	src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", opts...)
	var held atomic.Int64
	if err := holdSeven(t, src, &held, heldAfterTheRest(src, &held, 1)); err != nil {
		t.Fatal(err)
	}
	waitGivenUp(t, js, "IN", "hold")
	return src
}

var betweenReadsOpts = []natsx.SourceOption{natsx.Redeliver(1, 0), natsx.AckWait(100 * time.Millisecond),
	natsx.IdleCheck(10 * time.Millisecond), natsx.DeadLetterTo("dead.in")}

// A Read resolves the advisories stored before it started before it
// emits a message: a run that fails on its first message still
// dead-letters what the server gave up on while no Read ran.
func TestARunThatFailsAtOnceStillResolvesTheGiveUpsBeforeIt(t *testing.T) {
	js := serverWith(t, "IN", "DEAD")
	givenUpBetweenReads(t, js, betweenReadsOpts...)
	if _, err := js.Publish(ctxT(t, 5*time.Second), "in.x", []byte("20")); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", betweenReadsOpts...)
	p := sluice.New(ctxT(t, time.Minute))
	sluice.ForEach(p, "fail", natsx.Read(p, "read", src), 1, func(context.Context, natsx.Msg) error {
		return errors.New("crash")
	})
	err := quickly(t, 10*time.Second, p.Wait)
	wantErr(t, err, nil, "crash")
	if dead := deadMessages(t, js); len(dead) != 1 || string(dead[0].Data()) != "7" {
		t.Fatalf("dead-letter stream holds %d messages; want message 7 once (source %+v)", len(dead), src.Stats())
	}
}

// When a stream already holds the advisories (one an operator keeps for
// monitoring, say), the source reads them there rather than making its
// own.
func TestAdvisoriesAreReadFromAStreamThatAlreadyHoldsThem(t *testing.T) {
	js := serverWith(t, "IN", "DEAD")
	makeStream(t, js, "EVENTS", "$JS.EVENT.ADVISORY.>")
	givenUpBetweenReads(t, js, betweenReadsOpts...)
	src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", append(betweenReadsOpts, natsx.StopWhenCaughtUp())...)
	var held atomic.Int64
	if err := holdSeven(t, src, &held, func() bool { return false }); err != nil {
		t.Fatal(err)
	}
	if dead := deadMessages(t, js); len(dead) != 1 || string(dead[0].Data()) != "7" {
		t.Fatalf("dead-letter stream holds %d messages; want message 7 once (source %+v)", len(dead), src.Stats())
	}
	if _, err := js.Stream(ctxT(t, 5*time.Second), "NATSX_GAVEUP_IN"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("looking up the source's own advisory stream: %v; want %v", err, jetstream.ErrStreamNotFound)
	}
}

// An advisory about an earlier consumer of the same name (deleted, its
// sequences not the new one's) is dropped when NewSource creates the
// consumer anew: none of the new consumer's messages is dead-lettered for
// it.
func TestAnAdvisoryAboutAnEarlierConsumerOfTheSameNameIsDropped(t *testing.T) {
	js := serverWith(t, "IN", "DEAD")
	givenUpBetweenReads(t, js, betweenReadsOpts...)
	if err := js.DeleteConsumer(ctxT(t, 5*time.Second), "IN", "hold"); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", append(betweenReadsOpts, natsx.StopWhenCaughtUp())...)
	p := sluice.New(ctxT(t, time.Minute))
	sluice.ForEach(p, "ack", natsx.Read(p, "read", src), 1, func(context.Context, natsx.Msg) error { return nil })
	if err := quickly(t, 10*time.Second, p.Wait); err != nil {
		t.Fatal(err)
	}
	if st := src.Stats(); st.Acked != 20 || st.GaveUp != 0 || st.Parked != 0 {
		t.Fatalf("source %+v; want all 20 acknowledged, nothing given up or dead-lettered", st)
	}
	if dead := deadMessages(t, js); len(dead) != 0 {
		t.Fatalf("dead-letter stream holds %d messages; want none", len(dead))
	}
}

// Without a bound on deliveries the server gives up on nothing, and the
// source keeps no advisories: it creates no stream.
func TestASourceWithoutABoundOnDeliveriesKeepsNoAdvisories(t *testing.T) {
	js := serverWith(t, "IN")
	newSource(t, ctxT(t, 5*time.Second), js, "IN", "c")
	if _, err := js.Stream(ctxT(t, 5*time.Second), "NATSX_GAVEUP_IN"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("looking up the source's advisory stream: %v; want %v", err, jetstream.ErrStreamNotFound)
	}
	newSource(t, ctxT(t, 5*time.Second), js, "IN", "d", natsx.Redeliver(3, 0))
	if _, err := js.Stream(ctxT(t, 5*time.Second), "NATSX_GAVEUP_IN"); err != nil {
		t.Fatalf("looking up the advisory stream of a source with a bound on deliveries: %v", err)
	}
}

// An advisory the server stored while no Read ran outlives a restart of
// the server: the first Read after it resolves it.
func TestGiveUpIsKeptAcrossAServerRestart(t *testing.T) {
	srv, url, dir := embedded(t)
	nc, js := connect(t, url)
	makeStream(t, js, "IN", "in.>")
	makeStream(t, js, "DEAD", "dead.>")
	givenUpBetweenReads(t, js, betweenReadsOpts...)
	port := natsembed.Port(srv)
	natsembed.Stop(srv)
	srv2, _, err := natsembed.Start(dir, port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { natsembed.Stop(srv2) })
	eventually(t, 10*time.Second, "the client reconnected", nc.IsConnected)

	src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", append(betweenReadsOpts, natsx.StopWhenCaughtUp())...)
	var held atomic.Int64
	if err := holdSeven(t, src, &held, func() bool { return false }); err != nil {
		t.Fatal(err)
	}
	if dead := deadMessages(t, js); len(dead) != 1 || string(dead[0].Data()) != "7" {
		t.Fatalf("dead-letter stream holds %d messages; want message 7 once (source %+v)", len(dead), src.Stats())
	}
}

// A stream that has the name the source would give its advisory stream
// but holds other subjects keeps no advisories: NewSource fails, naming
// it, rather than read advisories that never come.
func TestNewSourceFailsWhenItsAdvisoryStreamNameHoldsOtherSubjects(t *testing.T) {
	js := serverWith(t, "IN")
	makeStream(t, js, "NATSX_GAVEUP_IN", "other.>")
	_, err := natsx.NewSource(ctxT(t, 5*time.Second), js, "IN", "c", natsx.Redeliver(3, 0))
	wantErr(t, err, nil, "natsx: source IN/c", "stream NATSX_GAVEUP_IN exists and does not hold $JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.IN.c")
}
