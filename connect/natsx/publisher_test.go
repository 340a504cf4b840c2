package natsx_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	natsx "github.com/sluicehq/sluice/connect/natsx"
	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

// A sink closed right after its first publish leaves no goroutine behind
// (nats.go's own asynchronous publisher could leave one, blocked for
// ever, when closed before its goroutine had started).
func TestASinkClosedRightAfterItsFirstPublishLeavesNoGoroutine(t *testing.T) {
	js := serverWith(t, "OUT")
	ctx := ctxT(t, time.Minute)
	before := goleak.IgnoreCurrent()
	for i := range 200 {
		sink, err := natsx.NewSink(ctx, js)
		if err != nil {
			t.Fatal(err)
		}
		if err := sink.Write(ctx, []natsx.Out{{Subject: "out.x", Data: []byte("x")}}); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		sink.Close()
	}
	goleak.VerifyNone(t, before)
}

// quietSubject makes subject one that a plain subscriber takes and no
// stream holds: a message published to it is delivered and never
// answered.
func quietSubject(t *testing.T, js interface{ Conn() *nats.Conn }, subject string) {
	t.Helper()
	sub, err := js.Conn().Subscribe(subject, func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
}

// A message that no answer comes for fails after AckTimeout with an
// error that says so, and the sink forgets it: nothing waits on.
func TestAMessageNeverAnsweredTimesOutAndIsForgotten(t *testing.T) {
	js := serverWith(t, "OUT")
	quietSubject(t, js, "quiet.>")
	// Long enough for out.a's answer to come on a loaded machine (with
	// 100ms it did not, in 1 of 5 runs of the package under -race).
	sink := newSink(t, ctxT(t, time.Minute), js, natsx.AckTimeout(time.Second))
	err := sink.Write(ctxT(t, 20*time.Second), []natsx.Out{
		{Subject: "out.a", Data: []byte("a")},
		{Subject: "quiet.x", Data: []byte("x")},
	})
	wantErr(t, err, nil, "no acknowledgement", "1s", `"quiet.x"`)
	if ss := sink.Stats(); ss.Published != 1 || ss.Failed != 1 || ss.Rejected != 0 {
		t.Fatalf("sink %+v; want 1 published, 1 failed, none rejected", ss)
	}
	if n := natsx.Waiting(sink); n != 0 {
		t.Fatalf("%d writes still wait for answers; want none", n)
	}
}

// Close fails a write still waiting for its answers at once, and every
// write after it; a second Close is harmless.
func TestCloseFailsTheWritesWaitingAndThoseAfter(t *testing.T) {
	js := serverWith(t, "OUT")
	quietSubject(t, js, "quiet.>")
	ctx := ctxT(t, time.Minute)
	sink, err := natsx.NewSink(ctx, js, natsx.AckTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sink.Write(ctx, []natsx.Out{{Subject: "quiet.x", Data: []byte("x")}}) }()
	for natsx.Waiting(sink) == 0 {
		time.Sleep(time.Millisecond)
	}
	sink.Close()
	select {
	case err := <-done:
		wantErr(t, err, nil, "sink was closed", `"quiet.x"`)
	case <-time.After(10 * time.Second):
		t.Fatal("the write still waits 10s after Close")
	}
	err = sink.Write(ctx, []natsx.Out{{Subject: "out.x", Data: []byte("x")}})
	wantErr(t, err, nil, "sink was closed")
	sink.Close()
	if n := natsx.Waiting(sink); n != 0 {
		t.Fatalf("%d writes still wait for answers; want none", n)
	}
}

// Closing the connection, without Close, ends the sink's goroutine too.
func TestClosingTheConnectionEndsTheSinksGoroutine(t *testing.T) {
	_, url, _ := embedded(t)
	nc, js := connect(t, url)
	makeStream(t, js, "OUT", "out.>")
	ctx := ctxT(t, time.Minute)
	before := goleak.IgnoreCurrent()
	sink, err := natsx.NewSink(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Write(ctx, []natsx.Out{{Subject: "out.x", Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	// The connection's own goroutines end with it as well.
	goleak.VerifyNone(t, before)
	err = sink.Write(ctx, []natsx.Out{{Subject: "out.x", Data: []byte("x")}})
	wantErr(t, err, nats.ErrConnectionClosed, "not stored")
}

// A connection lost while a write waits fails its messages at once with
// nats.ErrDisconnected (their answers are lost with it), not after
// AckTimeout.
func TestALostConnectionFailsTheWritesWaiting(t *testing.T) {
	srv, url, _ := embedded(t)
	_, js := connect(t, url)
	quietSubject(t, js, "quiet.>")
	ctx := ctxT(t, time.Minute)
	sink := newSink(t, ctx, js, natsx.AckTimeout(time.Minute))
	done := make(chan error, 1)
	go func() { done <- sink.Write(ctx, []natsx.Out{{Subject: "quiet.x", Data: []byte("x")}}) }()
	for natsx.Waiting(sink) == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the message reaches the server
	natsembed.Stop(srv)
	select {
	case err := <-done:
		wantErr(t, err, nats.ErrDisconnected, "not stored", `"quiet.x"`)
	case <-time.After(10 * time.Second):
		t.Fatal("the write still waits 10s after the server stopped")
	}
	if n := natsx.Waiting(sink); n != 0 {
		t.Fatalf("%d writes still wait for answers; want none", n)
	}
}
