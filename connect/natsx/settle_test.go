package natsx_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// The core's settle contract holds on a real server: a message that a
// Filter drops, that SkipErrors skips, that a DeadLetter stage routes to a
// stream whose sink stores it, or that a FlatMap and a Broadcast turn into
// several results, is acknowledged once — no message is left awaiting an
// acknowledgement, and none is delivered again.
func TestEveryStagePolicyAcknowledgesItsMessagesOnTheServer(t *testing.T) {
	js := serverWith(t, "IN", "OUT", "DEAD")
	const n = 50
	publishN(t, js, "in.x", n)
	ctx := ctxT(t, 20*time.Second)
	// StopWhenCaughtUp ends the run only once every message is settled;
	// one left unsettled would hold it until ctx's deadline.
	src := newSource(t, ctx, js, "IN", "contract", natsx.StopWhenCaughtUp(), natsx.IdleCheck(20*time.Millisecond))
	sink := newSink(t, ctx, js, natsx.ToStream("OUT"))
	dead := newSink(t, ctx, js, natsx.ToStream("DEAD"))
	num := func(m natsx.Msg) int { i, _ := strconv.Atoi(string(m.Data())); return i }

	p := sluice.New(ctx)
	kept := sluice.Filter(p, "filter", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) (bool, error) {
		return num(m)%5 != 0, nil // a drop is acknowledged
	})
	var bad sluice.Stream[sluice.Failed[natsx.Msg]]
	checked := sluice.Map(p, "check", kept, 2, func(_ context.Context, m natsx.Msg) (natsx.Msg, error) {
		if num(m)%5 == 1 {
			return m, errors.New("unreadable")
		}
		return m, nil
	}, sluice.DeadLetter(&bad))
	deadOuts := sluice.Map(p, "dead-out", bad, 1, func(_ context.Context, f sluice.Failed[natsx.Msg]) (natsx.Out, error) {
		return natsx.DeadLetterOut(f.Item, "dead.in", f.Err), nil // stored, then acknowledged
	})
	natsx.Publish(p, "publish-dead", deadOuts, dead)
	outs := sluice.FlatMap(p, "split", checked, 2, func(_ context.Context, m natsx.Msg, emit func(natsx.Out) bool) error {
		for _, part := range []string{"a", "b"} { // two results, each holding the message
			emit(natsx.Out{Subject: "out." + part, Data: m.Data(), ID: part + m.ID(), From: m.Receipt})
		}
		return nil
	})
	copies := sluice.Broadcast(p, "copy", outs, 2)
	natsx.Publish(p, "publish", copies[0], sink)
	sluice.ForEach(p, "audit", copies[1], 1, func(_ context.Context, o natsx.Out) error {
		if i, _ := strconv.Atoi(string(o.Data)); i%5 == 2 {
			return errors.New("audit failed") // skipped, and so acknowledged
		}
		return nil
	}, sluice.SkipErrors())
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}

	ci := consumerState(t, js, "IN", "contract")
	st := src.Stats()
	if ci.NumAckPending != 0 || ci.NumRedelivered != 0 || ci.NumPending != 0 || st.Acked != n || st.InFlight != 0 {
		t.Fatalf("consumer: %d awaiting ack, %d redelivered, %d pending; source %+v; want every one of %d acknowledged once",
			ci.NumAckPending, ci.NumRedelivered, ci.NumPending, st, n)
	}
	if ids, total := storedIDs(t, js, "DEAD"); total != n/5 || len(ids) != n/5 {
		t.Fatalf("dead-letter stream holds %d messages; want %d", total, n/5)
	}
	if _, total := storedIDs(t, js, "OUT"); total != 2*(n-2*n/5) {
		t.Fatalf("output stream holds %d messages; want %d", total, 2*(n-2*n/5))
	}
}
