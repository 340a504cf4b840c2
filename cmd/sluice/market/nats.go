package market

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
	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// The NATS JetStream pipeline's streams and subjects. RunNATS deletes and
// re-creates the streams, empty, when it starts.
const (
	NATSIn       = "DEMO_MARKET"
	NATSOut      = "DEMO_ENRICHED"
	NATSDead     = "DEMO_DEAD"
	NATSInSubj   = "market.events"
	NATSOutSubj  = "market.enriched"
	NATSDeadSubj = "market.dead"
	natsDurable  = "demo"
)

// ReasonHeader is the header of a NATS dead letter that says why the event
// was dead-lettered.
const ReasonHeader = "Demo-Reason"

// NATSConfig is what RunNATS generates and how the pipeline runs.
type NATSConfig struct {
	Events      int           // events to generate, when Duration is 0
	Duration    time.Duration // generate for this long instead of Events
	Rate        int           // events per second to aim at; 0: as fast as the server stores them
	Malformed   float64       // fraction of events made malformed
	Decoders    int           // decode+validate workers
	Lookup      time.Duration // one reference lookup's round trip (one per batch)
	MaxInFlight int           // the consumer's MaxAckPending
	Storage     jetstream.StorageType

	// Progress, if not nil, gets a line a second.
	Progress io.Writer
	// OnStart, if not nil, gets the pipeline before it runs (to show it
	// on a dash page).
	OnStart func(*sluice.Pipeline)

	Observe Observe // logs and traces
}

// NATSResult is what one RunNATS measured.
type NATSResult struct {
	Generated int64            // events the server stored in the input stream
	Stored    int64            // enriched events stored in the output stream
	Dead      int64            // dead letters stored
	Reasons   map[string]int64 // dead letters by reason
	Wall      time.Duration    // from the generator's start until every event was stored (or the drain ended)
	GenWall   time.Duration    // until the generator had every event stored
	Latency   Latencies        // fetched from the input stream → result stored
	EndToEnd  Latencies        // input stored → result stored, one event in 8
	Lookups   int64
	Batches   int64
	Source    natsx.SourceStats
	Sink      natsx.SinkStats
	Stages    sluice.Snapshot
	Client    nats.Statistics // the pipeline's connection
	Drained   error           // the cause of a drain that ended the run early, or nil
}

// PerSec is the events settled (stored or dead-lettered) per second.
func (r NATSResult) PerSec() float64 { return float64(r.Stored+r.Dead) / r.Wall.Seconds() }

// ResetStream deletes the stream name and creates it again, empty, for
// subject.
func ResetStream(ctx context.Context, js jetstream.JetStream, name, subject string, storage jetstream.StorageType) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("resetting stream %s: %w", name, err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Storage: storage}); err != nil {
		return fmt.Errorf("creating stream %s: %w", name, err)
	}
	return nil
}

// RunNATS resets the pipeline's streams on the server at url, generates
// events into the input stream and runs the pipeline over them until every
// one is stored, or until drain is done: then the generator stops, the
// pipeline drains (its source takes no new message; what it holds is
// stored and acknowledged) and the result covers what was stored.
func RunNATS(ctx, drain context.Context, url string, cfg NATSConfig) (res NATSResult, err error) {
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
	for _, s := range [][2]string{{NATSIn, NATSInSubj}, {NATSOut, NATSOutSubj}, {NATSDead, NATSDeadSubj}} {
		if err := ResetStream(ctx, js, s[0], s[1], cfg.Storage); err != nil {
			return res, err
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	observe := []natsx.Option{natsx.Propagate(cfg.Observe.Propagator), natsx.Logger(cfg.Observe.Logger)}
	src, err := natsx.NewSource(ctx, js, NATSIn, natsDurable,
		natsx.FetchBatch(500), natsx.MaxInFlight(cfg.MaxInFlight), natsx.AckWait(30*time.Second), observe[0], observe[1])
	if err != nil {
		return res, err
	}
	sink, err := natsx.NewSink(ctx, js, observe[0], observe[1])
	if err != nil {
		return res, err
	}
	defer sink.Close()
	// Once every generated event is stored, the pipeline drains: its
	// source takes nothing more, and it ends as it does at a signal.
	complete, finish := context.WithCancel(ctx)
	defer finish()
	c := &natsCounts{tally: newTally(), finish: finish}
	refs := newRefs(cfg.Lookup)
	p := natsPipeline(ctx, src, storedBy(sink, c.onStored), refs, cfg.Decoders, cfg.Observe)
	p.DrainOn(drain)
	p.DrainOn(complete)
	if cfg.OnStart != nil {
		cfg.OnStart(p)
	}
	res, err = c.run(ctx, drain, p, src, genConn, cfg)
	cancel(nil)
	if err != nil {
		return res, err
	}
	res.Source, res.Sink = src.Stats(), sink.Stats()
	res.Lookups = refs.Lookups()
	res.Client = nc.Stats()
	return res, nil
}

// natsCounts is what a NATS run counts as the sink stores.
type natsCounts struct {
	committed, stored, dead, generated atomic.Int64
	genDone                            atomic.Bool
	doneAt                             atomic.Int64 // when every generated event was stored, in Unix ns
	sampleTick                         atomic.Uint64
	tally                              *tally
	finish                             func() // ends the run: every generated event is stored
}

// onStored counts a stored batch: latencies (input stored → output
// stored for one in eight), dead letters by reason, and the run's end.
func (c *natsCounts) onStored(b []outMsg) {
	now := time.Now()
	var nDead int64
	c.tally.mu.Lock()
	for i := range b {
		o := &b[i]
		d := now.Sub(o.in.Received())
		c.tally.lat.Add(d)
		c.tally.window.Add(d)
		if c.sampleTick.Add(1)&7 == 0 {
			if md, err := o.in.Metadata(); err == nil {
				c.tally.e2e.Add(now.Sub(md.Timestamp))
			}
		}
		if o.Subject == NATSDeadSubj {
			nDead++
			c.tally.reasons[o.Header.Get(ReasonHeader)]++
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
func (c *natsCounts) checkDone() {
	if c.genDone.Load() && c.committed.Load() >= c.generated.Load() {
		c.doneAt.CompareAndSwap(0, time.Now().UnixNano())
		c.finish()
	}
}

// run starts the generator and the progress lines, waits for the pipeline
// p, and returns what the run measured.
func (c *natsCounts) run(ctx, drain context.Context, p *sluice.Pipeline, src *natsx.Source, genConn *nats.Conn, cfg NATSConfig) (res NATSResult, err error) {
	start := time.Now()
	genErr := make(chan error, 1)
	genCtx, stopGen := context.WithCancel(ctx)
	defer stopGen()
	defer context.AfterFunc(drain, stopGen)()
	go func() {
		defer stopGen()
		err := GenerateNATS(genCtx, genConn, NATSInSubj, cfg, &c.generated)
		res.GenWall = time.Since(start) // read after genErr
		c.genDone.Store(true)
		c.checkDone()
		genErr <- err
	}()
	progressDone, progressExited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(progressExited)
		if cfg.Progress != nil {
			progress(cfg.Progress, start, progressDone, &c.committed, &c.dead, c.tally, src)
		}
	}()
	werr := p.Wait()
	res.Wall = time.Since(start)
	if at := c.doneAt.Load(); at > 0 {
		res.Wall = time.Unix(0, at).Sub(start) // not counting the drain's end
	}
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
		res.Drained = context.Cause(drain)
	}
	res.Generated = c.generated.Load()
	res.Stored, res.Dead = c.stored.Load(), c.dead.Load()
	res.Reasons, res.Latency, res.EndToEnd = c.tally.results()
	res.Stages = p.Stats()
	for _, s := range res.Stages.Stages {
		if s.Name == "enrich" {
			res.Batches = s.In
		}
	}
	return res, nil
}

// item travels through the pipeline after normalisation: the message it
// came from (to be acknowledged once its result is stored) and its tick.
type item struct {
	msg  natsx.Msg
	tick Tick
}

// decoded is an event after the decode stage.
type decoded struct {
	msg natsx.Msg
	ev  Event
}

// natsPipeline builds the market-event pipeline on NATS JetStream:
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
func natsPipeline(ctx context.Context, src *natsx.Source, write func(context.Context, []outMsg) error, refs *refStore, decoders int, obs Observe) *sluice.Pipeline {
	p := sluice.New(ctx, obs.options()...)
	msgs := natsx.Read(p, "consume", src)
	var bad sluice.Stream[sluice.Failed[natsx.Msg]]
	dec := sluice.Map(p, "decode", msgs, decoders, func(_ context.Context, m natsx.Msg) (decoded, error) {
		ev, err := Decode(m.Data())
		return decoded{msg: m, ev: ev}, err
	}, sluice.DeadLetter(&bad))
	norm := sluice.Map(p, "normalise", dec, 1, func(_ context.Context, d decoded) (item, error) {
		return item{msg: d.msg, tick: Normalise(d.ev)}, nil
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
// run's measurements read; its Out's From settles that message.
type outMsg struct {
	natsx.Out
	in natsx.Msg
}

// storedBy returns the pipeline's write: sink.Write, as natsx.Publish
// calls it, then onStored with the batch it stored.
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

// deadLetter is the message that dead-letters m for reason.
func deadLetter(m natsx.Msg, reason string) outMsg {
	return outMsg{natsx.Out{Subject: NATSDeadSubj, Data: m.Data(), ID: m.ID(), From: m.Receipt,
		Header: nats.Header{ReasonHeader: []string{reason}}}, m}
}

// enrich turns a batch into messages to publish, looking up the reference
// data of all its symbols at once; an event whose symbol has none is
// dead-lettered.
func enrich(b []item, refs *refStore) []outMsg {
	syms := make(map[string]refData, len(symbols))
	for _, it := range b {
		syms[it.tick.Symbol] = refData{}
	}
	refs.Lookup(syms)
	outs := make([]outMsg, len(b))
	buf := make([]byte, 0, 96*len(b))
	for i, it := range b {
		r, ok := syms[it.tick.Symbol]
		if !ok {
			outs[i] = deadLetter(it.msg, "unknown symbol")
			continue
		}
		n := len(buf)
		buf = encodeEnriched(buf, it.tick, r)
		outs[i] = outMsg{natsx.Out{Subject: NATSOutSubj, Data: buf[n:len(buf):len(buf)], ID: it.msg.ID(), From: it.msg.Receipt}, it.msg}
	}
	return outs
}

// GenerateNATS publishes cfg.Events market events (or as many as it can in
// cfg.Duration) to subject, at cfg.Rate per second if set, each with the
// message ID "ev-N"; it counts in generated those the server has stored.
func GenerateNATS(ctx context.Context, nc *nats.Conn, subject string, cfg NATSConfig, generated *atomic.Int64) error {
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
		if cfg.Duration > 0 {
			if time.Since(start) >= cfg.Duration {
				return nil
			}
		} else if i >= cfg.Events {
			return nil
		}
		n := window
		if cfg.Duration == 0 {
			n = min(n, cfg.Events-i)
		}
		ts := time.Now().UnixNano()
		for range n {
			buf = Generate(buf[:0], rng, i, ts, cfg.Malformed)
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
		if cfg.Rate > 0 {
			ahead := time.Duration(float64(i)/float64(cfg.Rate)*1e9) - time.Since(start)
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
			fmt.Fprintf(w, "%6.1fs  %7s events/s  fetched → stored p50 %-7s p99 %-7s  in flight %6d  dead-lettered %6d  stored %d\n",
				now.Sub(start).Seconds(), SI(float64(c-last)/now.Sub(lastAt).Seconds()),
				Ms(win.Q(0.5)), Ms(win.Q(0.99)), src.Stats().InFlight, dead.Load(), c)
			last, lastAt = c, now
		}
	}
}

// tally is what the sink's writes measured: latencies and dead letters by
// reason. The sink's workers add to it under mu; the progress line and the
// result read it.
type tally struct {
	mu       sync.Mutex
	lat, e2e Latencies // fetched → stored; input stored → output stored (sampled)
	window   Latencies // fetched → stored since the last takeWindow
	reasons  map[string]int64
}

func newTally() *tally { return &tally{reasons: map[string]int64{}} }

// takeWindow returns the fetched → stored latencies since its last call.
func (t *tally) takeWindow() Latencies {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.window
	t.window = Latencies{}
	return w
}

// results returns copies of the dead letters by reason and the latencies.
func (t *tally) results() (reasons map[string]int64, lat, e2e Latencies) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.reasons), t.lat, t.e2e
}
