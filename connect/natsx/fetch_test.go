package natsx_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// When a run stops, every message the client received but the source did
// not emit — including those still queued inside nats.go, not yet handed
// to the source — is handed back at once, as Read's doc says: the server
// then counts as awaiting acknowledgement only what the stopped pipeline
// holds (the source's InFlight), not messages left to come back after
// AckWait.
func TestStopHandsBackEveryMessageReceivedButNotEmitted(t *testing.T) {
	js := serverWith(t, "IN")
	const n, batch = 2000, 50
	publishN(t, js, "in.x", n)

	ctx, cancel := context.WithCancel(ctxT(t, 30*time.Second))
	defer cancel()
	src := newSource(t, ctx, js, "IN", "stop", natsx.AckWait(time.Minute), natsx.FetchBatch(batch))
	p := sluice.New(ctx)
	// The only worker holds the first message until the run stops, so
	// the edge fills, the source waits, and nats.go queues what arrives.
	sluice.ForEach(p, "hold", natsx.Read(p, "read", src), 1, func(ctx context.Context, m natsx.Msg) error {
		<-ctx.Done()
		return ctx.Err()
	})
	// Received by the client beyond what the source emitted, the batch
	// on its way to it and the message its handler holds: queued inside
	// nats.go.
	eventually(t, 10*time.Second, "messages queued inside nats.go", func() bool {
		return consumerState(t, js, "IN", "stop").NumAckPending > int(src.Stats().Received)+batch+1
	})
	cancel()
	if err := p.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait: %v; want %v", err, context.Canceled)
	}
	st := src.Stats()
	if st.Received-st.HandedBack != st.InFlight || st.InFlight < 1 {
		t.Fatalf("source %+v after the stop; want every message not emitted naked", st)
	}

	// A second run gets every message but those the first one holds,
	// long before their AckWait.
	ctx2, cancel2 := context.WithCancel(ctxT(t, 30*time.Second))
	defer cancel2()
	src2, err := natsx.NewSource(ctx2, js, "IN", "stop", natsx.AckWait(time.Minute), natsx.FetchBatch(batch))
	if err != nil {
		t.Fatal(err)
	}
	p2 := sluice.New(ctx2)
	sluice.ForEach(p2, "ack", natsx.Read(p2, "read", src2), 1, func(context.Context, natsx.Msg) error { return nil })
	want := n - st.InFlight
	deadline := time.Now().Add(10 * time.Second)
	for src2.Stats().Acked < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel2()
	_ = p2.Wait()
	if got := src2.Stats().Acked; got != want {
		t.Fatalf("the second run got %d messages within 10s, want %d: all but the %d the first run holds (first run: %+v)", got, want, st.InFlight, st)
	}
}

// A consumer deleted under a running source fails the run at once, with
// an error naming the consumer, rather than leaving it waiting.
func TestDeletedConsumerFailsTheRun(t *testing.T) {
	js := serverWith(t, "IN")
	publishN(t, js, "in.x", 10)
	ctx := ctxT(t, 30*time.Second)
	src := newSource(t, ctx, js, "IN", "gone", natsx.IdleCheck(20*time.Millisecond))
	p := sluice.New(ctx)
	var acked atomic.Int64
	sluice.ForEach(p, "ack", natsx.Read(p, "read", src), 1, func(context.Context, natsx.Msg) error {
		acked.Add(1)
		return nil
	})
	eventually(t, 10*time.Second, "the messages acknowledged", func() bool { return acked.Load() == 10 })
	if err := js.DeleteConsumer(ctx, "IN", "gone"); err != nil {
		t.Fatal(err)
	}
	err := quickly(t, 10*time.Second, p.Wait)
	wantErr(t, err, nil, "natsx: source IN/gone")
	t.Log(err)
}

// A Source read again after a cancelled run catches up: the messages the
// first run abandoned come back after AckWait and are settled by the
// second, which then stops (StopWhenCaughtUp asks the server, not the
// source's own count, which still holds the abandoned ones).
func TestASourceReadAgainAfterACancelledRunCatchesUp(t *testing.T) {
	js := serverWith(t, "IN")
	const n = 20
	publishN(t, js, "in.x", n)
	ctx := ctxT(t, 30*time.Second)
	src := newSource(t, ctx, js, "IN", "again", natsx.AckWait(500*time.Millisecond), natsx.FetchBatch(5),
		natsx.StopWhenCaughtUp(), natsx.IdleCheck(20*time.Millisecond))
	first, cancel := context.WithCancel(ctx)
	p := sluice.New(first)
	sluice.ForEach(p, "hold", natsx.Read(p, "read", src), 1, func(ctx context.Context, m natsx.Msg) error {
		if string(m.Data()) == "3" {
			cancel() // the run stops holding this message and those behind it
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	if err := p.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("first run: %v; want %v", err, context.Canceled)
	}
	if st := src.Stats(); st.Acked != 3 || st.InFlight < 1 {
		t.Fatalf("first run: source %+v; want 3 acknowledged and the held one in flight", st)
	}

	p = sluice.New(ctx)
	sluice.ForEach(p, "ack", natsx.Read(p, "read", src), 1, func(context.Context, natsx.Msg) error { return nil })
	if err := quickly(t, 10*time.Second, p.Wait); err != nil {
		t.Fatal(err)
	}
	if ci := consumerState(t, js, "IN", "again"); ci.NumPending != 0 || ci.NumAckPending != 0 || src.Stats().Acked != n {
		t.Fatalf("consumer: %d pending, %d awaiting ack; source %+v; want every message acknowledged", ci.NumPending, ci.NumAckPending, src.Stats())
	}
}
