package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/internal/hist"
	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// decoded is an event after the decode stage.
type decoded struct {
	msg natsx.Msg
	ev  event
}

// marketResult is what one demo run measured.
type marketResult struct {
	generated int64
	stored    int64 // enriched events stored in the output stream
	dead      int64 // dead-lettered
	reasons   map[string]int64
	wall      time.Duration
	genWall   time.Duration // until the generator had every event stored
	fig       figures
	lat, e2e  latencies
	lookups   int64
	batches   int64
	src       natsx.SourceStats
	sink      natsx.SinkStats
	snap      sluice.Snapshot
	client    string
	drained   error // the cause of a drain that ended the run early (the signal), or nil
}

func (r marketResult) perSec() float64 { return float64(r.stored+r.dead) / r.wall.Seconds() }

func (r marketResult) print(w io.Writer) {
	if r.drained != nil {
		fmt.Fprintf(w, "interrupted (%v): drained: the source took no new events; of the %d it had received, %d were stored and acknowledged, %d handed back unprocessed (nak), %d unsettled\n",
			r.drained, r.src.Received, r.src.Acked, r.src.HandedBack, r.src.InFlight)
	}
	n := r.generated // all of them were stored, unless drained
	if r.drained != nil {
		n = r.stored + r.dead
	}
	fmt.Fprintf(w, "demo: %d events in %.2fs = %s events/s; %d enriched and stored, %d dead-lettered %v\n",
		n, r.wall.Seconds(), si(r.perSec()), r.stored, r.dead, r.reasons)
	fmt.Fprintf(w, "generator: %d events stored in the input stream in %.2fs = %s events/s, concurrently with the pipeline\n",
		r.generated, r.genWall.Seconds(), si(float64(r.generated)/r.genWall.Seconds()))
	fmt.Fprintf(w, "latency, fetched → stored: p50 %s  p99 %s  max %s\n", ms(r.lat.q(0.5)), ms(r.lat.q(0.99)), ms(r.lat.max))
	fmt.Fprintf(w, "latency, input stored → output stored (1 in 8): p50 %s  p99 %s  max %s\n", ms(r.e2e.q(0.5)), ms(r.e2e.q(0.99)), ms(r.e2e.max))
	fmt.Fprintf(w, "reference lookups: %d for %d batches\n", r.lookups, r.batches)
	fmt.Fprintf(w, "source: %+v\nsink: %+v\n%s\n", r.src, r.sink, r.client)
	fmt.Fprintf(w, "process (pipeline + generator + embedded server if any): %s, %.1f µs CPU per event\n",
		r.fig, r.fig.CPU().Seconds()*1e6/float64(max(1, r.generated)))
	fmt.Fprintln(w, "where the pipeline's time goes (per stage, summed over its goroutines):")
	for _, s := range r.snap.Stages {
		fmt.Fprintf(w, "  %-18s %2d goroutines  in %8d  out %8d  failed %6d  busy %7.2fs  waiting %7.2fs\n",
			s.Name, s.Workers, s.In, s.Out, s.Failed, s.Busy.Seconds(), s.Blocked.Seconds())
	}
}

// runMarket generates events and runs the market-event pipeline over them until
// every one is stored, or until drain is done: then the generator stops,
// the pipeline drains (its source takes no new message; what it holds is
// stored and acknowledged) and the result covers what was stored. It
// prints progress every second (unless f.quiet).
func runMarket(ctx context.Context, drain context.Context, url string, f demoFlags, stdout io.Writer, d *liveDash) (res marketResult, err error) {
	genConn, err := natsx.Connect(url, nats.Name("sluice-demo-generator"))
	if err != nil {
		return res, err
	}
	defer genConn.Close()
	nc, err := natsx.Connect(url, nats.Name("sluice-demo-pipeline"))
	if err != nil {
		return res, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	src, err := natsx.NewSource(ctx, js, demoIn, demoDurable,
		natsx.FetchBatch(500), natsx.MaxInFlight(f.inflight), natsx.AckWait(30*time.Second))
	if err != nil {
		return res, err
	}
	sink, err := natsx.NewSink(ctx, js)
	if err != nil {
		return res, err
	}
	defer sink.Close()
	// Once every generated event is stored, the pipeline drains: its
	// source takes nothing more, and it ends as it does at a signal.
	complete, finish := context.WithCancel(ctx)
	defer finish()
	c := &marketCounts{tally: newTally(), finish: finish}
	refs := newRefService(f.lookup)
	p := marketPipeline(ctx, src, storedBy(sink, c.onStored), refs, f.decoders)
	p.DrainOn(drain)
	p.DrainOn(complete)
	if d != nil {
		d.show(p)
	}
	stopProfile, err := profile(f)
	if err != nil {
		return res, err
	}
	defer stopProfile()
	res, err = c.run(ctx, drain, p, src, genConn, f, stdout)
	cancel(nil)
	if err != nil {
		return res, err
	}
	res.src, res.sink = src.Stats(), sink.Stats()
	res.lookups = refs.lookups.Load()
	res.client = connStats(nc)
	return res, nil
}

// marketCounts is what a NATS demo run counts as the sink stores.
type marketCounts struct {
	committed, stored, dead, generated atomic.Int64
	genDone                            atomic.Bool
	doneAt                             atomic.Int64 // when every generated event was stored, in Unix ns
	sampleTick                         atomic.Uint64
	tally                              *tally
	finish                             func() // ends the run: every generated event is stored
}

// onStored counts a stored batch: latencies (input stored → output
// stored for one in eight), dead letters by reason, and the run's end.
func (c *marketCounts) onStored(b []outMsg) {
	now := time.Now()
	var nDead int64
	c.tally.mu.Lock()
	for i := range b {
		o := &b[i]
		c.tally.fetched(now.Sub(o.in.Received()))
		if c.sampleTick.Add(1)&7 == 0 {
			if md, err := o.in.Metadata(); err == nil {
				c.tally.e2e.add(now.Sub(md.Timestamp))
			}
		}
		if o.Subject == demoDeadSubj {
			nDead++
			c.tally.reasons[o.Header.Get(demoReason)]++
		}
	}
	c.tally.mu.Unlock()
	c.dead.Add(nDead)
	c.stored.Add(int64(len(b)) - nDead)
	c.committed.Add(int64(len(b)))
	c.checkDone()
}

// checkDone ends the run once the generator is done and every event it
// generated is stored.
func (c *marketCounts) checkDone() {
	if c.genDone.Load() && c.committed.Load() >= c.generated.Load() {
		c.doneAt.CompareAndSwap(0, time.Now().UnixNano())
		c.finish()
	}
}

// run starts the generator and the progress lines, waits for the pipeline
// p, and returns what the run measured.
func (c *marketCounts) run(ctx, drain context.Context, p *sluice.Pipeline, src *natsx.Source, genConn *nats.Conn, f demoFlags, stdout io.Writer) (res marketResult, err error) {
	m := startMeasure()
	start := time.Now()
	genErr := make(chan error, 1)
	genCtx, stopGen := context.WithCancel(ctx)
	defer stopGen()
	defer context.AfterFunc(drain, stopGen)()
	go func() {
		defer stopGen()
		err := generateTo(genCtx, genConn, demoInSubj, f, &c.generated)
		res.genWall = time.Since(start) // read after genErr
		c.genDone.Store(true)
		c.checkDone()
		genErr <- err
	}()
	progressDone, progressExited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(progressExited)
		if !f.quiet {
			progress(stdout, start, progressDone, &c.committed, &c.dead, c.tally, src)
		}
	}()
	werr := p.Wait()
	res.wall = time.Since(start)
	if at := c.doneAt.Load(); at > 0 {
		res.wall = time.Unix(0, at).Sub(start) // not counting the drain's end
	}
	res.fig = m.stop()
	close(progressDone)
	<-progressExited
	stopGen() // if the pipeline failed
	gerr := <-genErr
	switch {
	case werr != nil:
		return res, werr
	case gerr != nil && !errors.Is(gerr, context.Canceled):
		return res, fmt.Errorf("generator: %w", gerr)
	}
	if drain.Err() != nil { // a signal ended the run
		res.drained = context.Cause(drain)
	}
	res.generated = c.generated.Load()
	res.stored, res.dead = c.stored.Load(), c.dead.Load()
	res.reasons, res.lat, res.e2e = c.tally.results()
	res.snap = p.Stats()
	for _, s := range res.snap.Stages {
		if s.Name == "enrich" {
			res.batches = s.In
		}
	}
	return res, nil
}

// marketPipeline builds the market-event pipeline:
//
//	consume → decode+validate (n workers) → normalise (1) → collect (500, 50 ms)
//	        → enrich (2 workers, one reference lookup per batch) → publish (2 workers)
//	decode+validate's dead letters → dead-letter → publish-dead (2 workers)
//
// A malformed event fails decode+validate, whose error policy routes it,
// with the error as its reason, to the dead-letter stream; an event whose
// symbol has no reference data is found by the batch lookup, so enrich
// turns it into a dead letter itself. Both are published to the
// dead-letter subject with their reason and acknowledged once stored.
// write stores a batch (see storedBy); the publish stages acknowledge
// what it stored.
func marketPipeline(ctx context.Context, src *natsx.Source, write func(context.Context, []outMsg) error, refs *refService, decoders int) *sluice.Pipeline {
	p := sluice.New(ctx, sluice.Named("market"))
	msgs := natsx.Read(p, "consume", src)
	var bad sluice.Stream[sluice.Failed[natsx.Msg]]
	dec := sluice.Map(p, "decode", msgs, decoders, func(_ context.Context, m natsx.Msg) (decoded, error) {
		ev, err := decode(m.Data())
		return decoded{msg: m, ev: ev}, err
	}, sluice.DeadLetter(&bad))
	norm := sluice.Map(p, "normalise", dec, 1, func(_ context.Context, d decoded) (item, error) {
		return item{msg: d.msg, tick: normalise(d.ev)}, nil
	})
	batches := sluice.Batch(p, "collect", norm, 500, 50*time.Millisecond)
	outs := sluice.Map(p, "enrich", batches, 2, func(_ context.Context, b []item) ([]outMsg, error) {
		return enrich(b, refs), nil
	})
	retry := sluice.Retry(8, 50*time.Millisecond, 2*time.Second) // a server restart is a pause
	sluice.ForEach(p, "publish", outs, 2, write, retry)
	dead := sluice.Map(p, "dead-letter", bad, 1, func(_ context.Context, f sluice.Failed[natsx.Msg]) (outMsg, error) {
		return deadLetter(f.Item, f.Err.Error()), nil
	})
	sluice.ForEachChunk(p, "publish-dead", dead, 2, write, retry)
	return p
}

// outMsg is a message to publish with the message it came from, which the
// demo's measurements read; its Out's From settles that message.
type outMsg struct {
	natsx.Out
	in natsx.Msg
}

// storedBy returns the demo's write: sink.Write, as natsx.Publish calls
// it, then onStored with the batch it stored.
func storedBy(sink *natsx.Sink, onStored func([]outMsg)) func(context.Context, []outMsg) error {
	return func(ctx context.Context, b []outMsg) error {
		outs := make([]natsx.Out, len(b))
		for i := range b {
			outs[i] = b[i].Out
		}
		if err := sink.Write(ctx, outs); err != nil {
			return err
		}
		onStored(b)
		return nil
	}
}

// demoReason is the header that carries why an event was dead-lettered.
const demoReason = "Demo-Reason"

// deadLetter is the message that dead-letters m for reason.
func deadLetter(m natsx.Msg, reason string) outMsg {
	return outMsg{natsx.Out{Subject: demoDeadSubj, Data: m.Data(), ID: m.ID(), From: m.Receipt,
		Header: nats.Header{demoReason: []string{reason}}}, m}
}

// enrich turns a batch into messages to publish, looking up the reference
// data of all its symbols at once; an event whose symbol has none is
// dead-lettered.
func enrich(b []item, refs *refService) []outMsg {
	syms := make(map[string]refData, len(symbols))
	for _, it := range b {
		syms[it.tick.symbol] = refData{}
	}
	refs.Lookup(syms)
	outs := make([]outMsg, len(b))
	buf := make([]byte, 0, 96*len(b))
	for i, it := range b {
		r, ok := syms[it.tick.symbol]
		if !ok {
			outs[i] = deadLetter(it.msg, "unknown symbol")
			continue
		}
		n := len(buf)
		buf = encodeEnriched(buf, it.tick, r)
		outs[i] = outMsg{natsx.Out{Subject: demoOutSubj, Data: buf[n:len(buf):len(buf)], ID: it.msg.ID(), From: it.msg.Receipt}, it.msg}
	}
	return outs
}

// generateTo publishes f.events market events (or as many as it can in
// f.duration) to subject, at f.rate per second if set, counting in
// generated those the server has stored.
func generateTo(ctx context.Context, nc *nats.Conn, subject string, f demoFlags, generated *atomic.Int64) error {
	var failed atomic.Int64
	var firstErr atomic.Value
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
		failed.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}))
	if err != nil {
		return err
	}
	defer js.CleanupPublisher()
	rng := rand.New(rand.NewPCG(4, 4))
	const window = 1000
	start := time.Now()
	var buf []byte
	for i := 0; ; {
		if f.duration > 0 {
			if time.Since(start) >= f.duration {
				return nil
			}
		} else if i >= f.events {
			return nil
		}
		n := window
		if f.duration == 0 {
			n = min(n, f.events-i)
		}
		ts := time.Now().UnixNano()
		for range n {
			buf = genEvent(buf[:0], rng, i, ts, f.malformed)
			data := append([]byte(nil), buf...)
			if _, err := js.PublishAsync(subject, data, jetstream.WithMsgID("ev-"+strconv.Itoa(i))); err != nil {
				return err
			}
			i++
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
			return errors.New("the server has not acknowledged the events for 30s")
		}
		if failed.Load() > 0 {
			return fmt.Errorf("%d events not stored: %v", failed.Load(), firstErr.Load())
		}
		generated.Store(int64(i))
		if f.rate > 0 {
			ahead := time.Duration(float64(i)/float64(f.rate)*1e9) - time.Since(start)
			if ahead > 0 && !sleepCtx(ctx, ahead) {
				return ctx.Err()
			}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// progress prints a line every second until done is closed.
func progress(w io.Writer, start time.Time, done <-chan struct{}, committed, dead *atomic.Int64, tally *tally, src *natsx.Source) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last, lastAt := int64(0), start
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			c := committed.Load()
			win := tally.takeWindow()
			fmt.Fprintf(w, "%6.1fs  events/s %7s  latency p50 %-7s p99 %-7s  in-flight %6d  dead-lettered %6d  stored %d\n",
				now.Sub(start).Seconds(), si(float64(c-last)/now.Sub(lastAt).Seconds()),
				ms(win.q(0.5)), ms(win.q(0.99)), src.Stats().InFlight, dead.Load(), c)
			last, lastAt = c, now
		}
	}
}

// tally is what the sink's commits measured: latencies and dead letters by
// reason. The sink's workers add to it under mu; the progress line and the
// summary read it.
type tally struct {
	mu       sync.Mutex
	lat, e2e latencies // fetched → stored; input stored → output stored (sampled)
	window   latencies // fetched → stored since the last takeWindow
	reasons  map[string]int64
}

func newTally() *tally { return &tally{reasons: map[string]int64{}} }

// fetched adds the latency, fetched → stored, of one committed event.
// The caller holds mu.
func (t *tally) fetched(d time.Duration) {
	t.lat.add(d)
	t.window.add(d)
}

// takeWindow returns the fetched → stored latencies since its last call.
func (t *tally) takeWindow() latencies {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.window
	t.window = latencies{}
	return w
}

// results returns copies of the dead letters by reason and the latencies.
func (t *tally) results() (reasons map[string]int64, lat, e2e latencies) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.reasons), t.lat, t.e2e
}

// latencies is a histogram of durations (internal/hist: quantiles within
// 1/16 of the true value) and their exact maximum. The zero value is
// empty.
type latencies struct {
	c   hist.Counts
	max time.Duration
}

func (l *latencies) add(d time.Duration) {
	d = max(d, 0)
	l.c.Add(uint64(d))
	l.max = max(l.max, d)
}

// q returns the q-quantile, or 0 when empty. Interpolated inside its
// bucket, it never exceeds the exact maximum.
func (l *latencies) q(q float64) time.Duration {
	return min(time.Duration(l.c.Quantile(q)), l.max)
}

// ms formats d in milliseconds with two significant digits or so.
func ms(d time.Duration) string {
	v := d.Seconds() * 1e3
	switch {
	case v < 1:
		return fmt.Sprintf("%.2fms", v)
	case v < 10:
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.0fms", v)
}
