package natsx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// A message the server rejects (here: its subject belongs to another
// stream than the sink's ToStream) is reported at once with an error
// marked sluice.Permanent, so the core's Retry does not write it again;
// its neighbours in the chunk are stored.
func TestSinkDoesNotRetryAMessageTheServerRejects(t *testing.T) {
	js := serverWith(t, "OUT", "OTHER")
	sink := newSink(t, ctxT(t, time.Minute), js, natsx.ToStream("OUT"))
	err, st := publishOnce(t, sink, []natsx.Out{
		{Subject: "out.a", Data: []byte("a")},
		{Subject: "other.x", Data: []byte("x")},
		{Subject: "out.b", Data: []byte("b")},
	}, sluice.Retry(3, time.Millisecond, time.Millisecond))
	var ae *jetstream.APIError
	if !errors.As(err, &ae) || !sluice.IsPermanent(err) {
		t.Fatalf("publish: %v; want the server's rejection (a *jetstream.APIError), marked permanent", err)
	}
	wantErr(t, err, nil, "rejected", `"other.x"`)
	if ss := sink.Stats(); ss.Failed != 1 || ss.Rejected != 1 || ss.Published != 2 || st.Retries != 0 {
		t.Fatalf("sink %+v, stage retries %d; want 2 published, 1 rejected, no retry", ss, st.Retries)
	}
}

// A write that stores some messages and not others names only the
// others, each with its own error.
func TestAWriteThatStoresSomeMessagesNamesOnlyTheOthers(t *testing.T) {
	js := serverWith(t, "OUT", "OTHER")
	sink := newSink(t, ctxT(t, time.Minute), js, natsx.ToStream("OUT"))
	err := sink.Write(ctxT(t, 20*time.Second), []natsx.Out{
		{Subject: "out.a", Data: []byte("a")},
		{Subject: "other.x", Data: []byte("x")},
		{Subject: "out.b", Data: []byte("b")},
		{Subject: "other.y", Data: []byte("y")},
	})
	var ie sluice.ItemErrors
	if !errors.As(err, &ie) || len(ie) != 4 || ie[0] != nil || ie[2] != nil {
		t.Fatalf("got %v; want ItemErrors for messages 1 and 3 only", err)
	}
	for _, i := range []int{1, 3} {
		var ae *jetstream.APIError
		if !errors.As(ie[i], &ae) || !sluice.IsPermanent(ie[i]) {
			t.Errorf("message %d: %v; want the server's rejection, marked permanent", i, ie[i])
		}
	}
	wantErr(t, ie[3], nil, "rejected", `"other.y"`)
	if ss := sink.Stats(); ss.Published != 2 || ss.Rejected != 2 || ss.Failed != 2 {
		t.Fatalf("sink %+v; want 2 published, 2 rejected", ss)
	}
}

// With SkipErrors, a chunk with a message the server rejects is settled
// by the stage's policy: its messages are acknowledged (the rejected one
// dropped, its neighbours stored) and the run goes on.
func TestSkipErrorsSettlesAChunkWithARejectedMessage(t *testing.T) {
	js := serverWith(t, "IN", "OUT")
	const n = 40
	publishN(t, js, "in.x", n)
	ctx := ctxT(t, 20*time.Second)
	src := newSource(t, ctx, js, "IN", "skip", natsx.StopWhenCaughtUp(), natsx.IdleCheck(20*time.Millisecond))
	sink := newSink(t, ctx, js, natsx.ToStream("OUT"))
	p := copyPipeline(ctx, src, sink, func(m natsx.Msg) (natsx.Out, error) {
		subj := "out.x"
		if string(m.Data()) == "7" {
			subj = "in.loop" // IN's subject: the server rejects it for ToStream("OUT")
		}
		return natsx.Out{Subject: subj, Data: m.Data(), ID: m.ID(), From: m.Receipt}, nil
	}, sluice.SkipErrors())
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if st, ss := src.Stats(), sink.Stats(); st.Acked != n || st.InFlight != 0 || ss.Rejected != 1 || ss.Published != n-1 {
		t.Fatalf("source %+v, sink %+v; want all %d acknowledged, 1 rejected, the rest stored", st, ss, n)
	}
}

// PublishBatches writes each batch with one Write and acknowledges every
// message of a batch once it is stored.
func TestPublishBatchesAcknowledgesEveryMessageOfAStoredBatch(t *testing.T) {
	js := serverWith(t, "IN", "OUT")
	const n = 100
	publishN(t, js, "in.x", n)
	ctx := ctxT(t, 20*time.Second)
	src := newSource(t, ctx, js, "IN", "batches", natsx.StopWhenCaughtUp(), natsx.IdleCheck(20*time.Millisecond))
	sink := newSink(t, ctx, js, natsx.ToStream("OUT"))
	p := sluice.New(ctx)
	outs := sluice.Map(p, "copy", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) (natsx.Out, error) {
		return natsx.Out{Subject: "out.x", Data: m.Data(), ID: m.ID(), From: m.Receipt}, nil
	})
	natsx.PublishBatches(p, "publish", sluice.Batch(p, "batch", outs, 10, 5*time.Millisecond), sink)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	ids, _ := storedIDs(t, js, "OUT")
	checkEvery(t, ids, n)
	if st := src.Stats(); st.Acked != n || st.InFlight != 0 {
		t.Fatalf("source %+v; want all %d acknowledged", st, n)
	}
}

// An acknowledgement the client cannot send (here: the connection is
// closed) is counted in SettleErrors, not lost from the counts.
func TestAnAckTheClientCannotSendIsCounted(t *testing.T) {
	_, url, _ := embedded(t)
	nc, js := connect(t, url)
	makeStream(t, js, "IN", "in.>")
	publishN(t, js, "in.x", 1)
	ctx := ctxT(t, 20*time.Second)
	src := newSource(t, ctx, js, "IN", "closed")
	p := sluice.New(ctx)
	sluice.ForEach(p, "close", natsx.Read(p, "read", src), 1, func(context.Context, natsx.Msg) error {
		nc.Close()
		return nil // ForEach now acknowledges, on a closed connection
	})
	_ = p.Wait() // the source fails: the connection is closed for good
	if st := src.Stats(); st.SettleErrors != 1 || st.Acked != 0 || st.InFlight != 0 {
		t.Fatalf("source %+v; want the acknowledgement counted as a settle error", st)
	}
}
