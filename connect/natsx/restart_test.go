package natsx_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

// throttle slows a stage to about perMs items per millisecond, so that a
// run lasts long enough to be interrupted.
func throttle(perMs int) func() {
	n := 0
	return func() {
		if n++; n%perMs == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

func TestServerRestartMidRunLosesNothing(t *testing.T) {
	const n = 10000
	// The core's Retry writes a chunk again while the server is away.
	c := startSlowCopy(t, n, []natsx.SourceOption{natsx.StopWhenCaughtUp(), natsx.IdleCheck(50 * time.Millisecond)},
		sluice.Retry(40, 50*time.Millisecond, time.Second))
	done := make(chan error, 1)
	go func() { done <- c.p.Wait() }()

	eventually(t, 30*time.Second, "a quarter of the output stored", func() bool { return c.sink.Stats().Published >= n/4 })
	port := natsembed.Port(c.srv)
	natsembed.Stop(c.srv)
	stoppedAt := c.sink.Stats().Published
	srv2, _, err := natsembed.Start(c.dir, port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { natsembed.Stop(srv2) })

	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if stoppedAt >= n {
		t.Fatalf("the run was over (%d stored) before the server stopped", stoppedAt)
	}
	ids, total := storedIDs(t, c.js, "OUT")
	checkEvery(t, ids, n)
	if ci := consumerState(t, c.js, "IN", "copy"); ci.NumPending != 0 || ci.NumAckPending != 0 {
		t.Fatalf("consumer: %d pending, %d awaiting ack; want 0, 0", ci.NumPending, ci.NumAckPending)
	}
	t.Logf("stopped at %d stored; output %d; source %+v; sink %+v", stoppedAt, total, c.src.Stats(), c.sink.Stats())
}

// slowCopy is a pipeline that copies stream IN to stream OUT slowly
// enough for the server to go away mid-run, and the server it runs on.
type slowCopy struct {
	srv  *server.Server
	dir  string // the server's store
	js   jetstream.JetStream
	src  *natsx.Source
	sink *natsx.Sink
	p    *sluice.Pipeline
}

// startSlowCopy starts a server whose stream IN holds n messages, and
// builds (without waiting for it) a slowCopy on it: the source durable
// "copy" with AckWait 2s and srcOpts, a sink to OUT with AckTimeout 1s,
// a Publish stage with publishOpt, and a pipeline with opts.
func startSlowCopy(t *testing.T, n int, srcOpts []natsx.SourceOption, publishOpt sluice.StageOption, opts ...sluice.Option) slowCopy {
	t.Helper()
	srv, url, dir := embedded(t)
	_, js := connect(t, url)
	makeStream(t, js, "IN", "in.>")
	makeStream(t, js, "OUT", "out.>")
	publishN(t, js, "in.x", n)
	ctx := ctxT(t, 90*time.Second)
	src := newSource(t, ctx, js, "IN", "copy", append([]natsx.SourceOption{natsx.AckWait(2 * time.Second)}, srcOpts...)...)
	sink := newSink(t, ctx, js, natsx.ToStream("OUT"), natsx.AckTimeout(time.Second))
	p := sluice.New(ctx, opts...)
	slow := throttle(5)
	outs := sluice.Map(p, "copy", natsx.Read(p, "read", src), 1, func(_ context.Context, m natsx.Msg) (natsx.Out, error) {
		slow()
		return natsx.Out{Subject: "out." + m.ID(), Data: m.Data(), ID: m.ID(), From: m.Receipt}, nil
	})
	natsx.Publish(p, "publish", outs, sink, publishOpt)
	return slowCopy{srv: srv, dir: dir, js: js, src: src, sink: sink, p: p}
}

func TestSourceFailsOnceTheServerIsGoneForMaxOutage(t *testing.T) {
	srv, url, _ := embedded(t)
	_, js := connect(t, url)
	makeStream(t, js, "IN", "in.>")
	ctx := ctxT(t, 30*time.Second)
	src := newSource(t, ctx, js, "IN", "r", natsx.MaxOutage(300*time.Millisecond), natsx.IdleCheck(20*time.Millisecond))
	p := sluice.New(ctx)
	sluice.ForEach(p, "ack", natsx.Read(p, "read", src), 1, func(context.Context, natsx.Msg) error { return nil })
	natsembed.Stop(srv) // and never back
	err := quickly(t, 10*time.Second, p.Wait)
	wantErr(t, err, nil, "natsx: source IN/r: no connection to the server for 300ms")
}

// A drain that begins while the server is away ends within the drain's
// grace and an ack timeout: the writes still retrying give up once the
// grace has passed, the run fails with their error, and no input whose
// output was not stored is acknowledged.
func TestADrainDuringAnOutageEnds(t *testing.T) {
	const n = 10000
	c := startSlowCopy(t, n, []natsx.SourceOption{natsx.MaxOutage(time.Minute)},
		sluice.Retry(1000, 50*time.Millisecond, time.Second), sluice.DrainGrace(2*time.Second))
	eventually(t, 30*time.Second, "a quarter of the output stored", func() bool { return c.sink.Stats().Published >= n/4 })
	natsembed.Stop(c.srv) // and never back
	c.p.Drain()
	start := time.Now()
	err := quickly(t, 10*time.Second, c.p.Wait)
	t.Logf("Wait after %v: %v; source %+v; sink %+v", time.Since(start), err, c.src.Stats(), c.sink.Stats())
	wantErr(t, err, nil, `stage "publish"`, "not stored")
	if st, ss := c.src.Stats(), c.sink.Stats(); st.Acked > ss.Published {
		t.Fatalf("%d inputs acknowledged, %d outputs stored; every acknowledgement needs a stored output", st.Acked, ss.Published)
	}
}
