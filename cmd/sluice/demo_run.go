package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice"
	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// errDemoDone cancels the pipeline once every generated event is stored.
var errDemoDone = errors.New("every event stored")

// decoded is an event after the decode stage.
type decoded struct {
	msg  natsx.Msg
	ev   event
	dead string
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
	lat, e2e  histSnapshot
	lookups   int64
	batches   int64
	src       natsx.SourceStats
	sink      natsx.SinkStats
	snap      sluice.Snapshot
	client    string
}

func (r marketResult) perSec() float64 { return float64(r.stored+r.dead) / r.wall.Seconds() }

func (r marketResult) print(w io.Writer) {
	fmt.Fprintf(w, "demo: %d events in %.2fs = %s events/s; %d enriched and stored, %d dead-lettered %v\n",
		r.generated, r.wall.Seconds(), si(r.perSec()), r.stored, r.dead, r.reasons)
	fmt.Fprintf(w, "generator: %d events stored in the input stream in %.2fs = %s events/s, concurrently with the pipeline\n",
		r.generated, r.genWall.Seconds(), si(float64(r.generated)/r.genWall.Seconds()))
	fmt.Fprintf(w, "latency, fetched → stored: p50 %s  p99 %s  max %s\n", ms(r.lat.q(0.5)), ms(r.lat.q(0.99)), ms(r.lat.max))
	fmt.Fprintf(w, "latency, input stored → output stored (1 in 8): p50 %s  p99 %s\n", ms(r.e2e.q(0.5)), ms(r.e2e.q(0.99)))
	fmt.Fprintf(w, "reference lookups: %d for %d batches\n", r.lookups, r.batches)
	fmt.Fprintf(w, "source: %+v\nsink: %+v\n%s\n", r.src, r.sink, r.client)
	fmt.Fprintf(w, "process (pipeline + generator + embedded server if any): %s, %.1f µs CPU per event\n",
		r.fig, r.fig.CPU().Seconds()*1e6/float64(max(1, r.generated)))
	fmt.Fprintln(w, "where the pipeline's time goes (per stage, summed over its goroutines):")
	for _, s := range r.snap.Stages {
		fmt.Fprintf(w, "  %-14s %2d goroutines  in %8d  out %8d  busy %7.2fs  waiting %7.2fs\n",
			s.Name, s.Workers, s.In, s.Out, s.Busy.Seconds(), s.Blocked.Seconds())
	}
}

// runMarket generates events and runs seed 004's pipeline over them until
// every one is stored, printing progress every second (unless f.quiet).
func runMarket(ctx context.Context, url string, f demoFlags, stdout io.Writer, d *liveDash) (res marketResult, err error) {
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
		natsx.FetchBatch(500), natsx.MaxAckPending(f.inflight), natsx.AckWait(30*time.Second))
	if err != nil {
		return res, err
	}
	var (
		committed  atomic.Int64
		stored     atomic.Int64
		dead       atomic.Int64
		batches    atomic.Int64
		generated  atomic.Int64
		genDone    atomic.Bool
		lat, e2e   hist
		reasonsMu  sync.Mutex
		reasons    = map[string]int64{}
		checkDone  = func() {}
		sampleTick atomic.Uint64
	)
	onCommit := func(b []natsx.Out) {
		now := time.Now()
		var l, e [histBuckets]uint64
		var nDead int64
		for i := range b {
			o := &b[i]
			l[bucket(now.Sub(o.From.Received()))]++
			if sampleTick.Add(1)&7 == 0 {
				if md, err := o.From.Metadata(); err == nil {
					e[bucket(now.Sub(md.Timestamp))]++
				}
			}
			if o.Subject == demoDeadSubj {
				nDead++
				reasonsMu.Lock()
				reasons[o.Header.Get("Demo-Reason")]++
				reasonsMu.Unlock()
			}
		}
		lat.add(&l)
		e2e.add(&e)
		dead.Add(nDead)
		stored.Add(int64(len(b)) - nDead)
		batches.Add(1)
		committed.Add(int64(len(b)))
		checkDone()
	}
	checkDone = func() {
		if genDone.Load() && committed.Load() >= generated.Load() {
			cancel(errDemoDone)
		}
	}
	sink, err := natsx.NewSink(ctx, js, natsx.SinkWorkers(2), natsx.OnCommit(onCommit))
	if err != nil {
		return res, err
	}
	defer sink.Close()
	refs := newRefService(f.lookup)

	p := marketPipeline(ctx, src, sink, refs, f.decoders)
	if d != nil {
		d.show(p)
	}

	if f.profile != "" {
		pf, err := os.Create(f.profile)
		if err != nil {
			return res, err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return res, err
		}
		defer pprof.StopCPUProfile()
	}
	m := startMeasure()
	start := time.Now()
	genErr := make(chan error, 1)
	var genWall time.Duration
	go func() {
		err := generateTo(ctx, genConn, demoInSubj, f, &generated)
		genWall = time.Since(start)
		genDone.Store(true)
		checkDone()
		genErr <- err
	}()
	progressDone := make(chan struct{})
	progressExited := make(chan struct{})
	if !f.quiet {
		go func() {
			defer close(progressExited)
			progress(stdout, start, progressDone, &committed, &dead, &lat, src)
		}()
	} else {
		close(progressExited)
	}

	werr := p.Wait()
	res.wall = time.Since(start)
	res.fig = m.stop(int(generated.Load()))
	close(progressDone)
	<-progressExited
	cancel(nil) // stops the generator if the pipeline failed
	gerr := <-genErr
	if werr != nil && !errors.Is(werr, errDemoDone) {
		return res, werr
	}
	if gerr != nil && !errors.Is(gerr, context.Canceled) {
		return res, fmt.Errorf("generator: %w", gerr)
	}
	res.generated = generated.Load()
	res.genWall = genWall // written before genErr was sent
	res.stored, res.dead = stored.Load(), dead.Load()
	res.reasons = reasons
	res.lat, res.e2e = lat.snapshot(), e2e.snapshot()
	res.lookups, res.batches = refs.lookups.Load(), batches.Load()
	res.src, res.sink = src.Stats(), sink.Stats()
	res.snap = p.Stats()
	res.client = connStats(nc)
	return res, nil
}

// marketPipeline builds seed 004's pipeline:
//
//	consume → decode+validate (n workers) → normalise (1) → collect (500, 50 ms)
//	        → enrich (2 workers, one reference lookup per batch) → publish (2 workers)
//
// Malformed events are not dropped: they travel on, marked, and are
// published to the dead-letter subject with their reason.
func marketPipeline(ctx context.Context, src *natsx.Source, sink *natsx.Sink, refs *refService, decoders int) *sluice.Pipeline {
	p := sluice.New(ctx, sluice.Named("market"))
	msgs := natsx.Read(p, "consume", src)
	dec := sluice.Map(p, "decode", msgs, decoders, func(_ context.Context, m natsx.Msg) (decoded, error) {
		ev, err := decode(m.Data())
		if err != nil {
			return decoded{msg: m, dead: err.Error()}, nil
		}
		return decoded{msg: m, ev: ev}, nil
	})
	norm := sluice.Map(p, "normalise", dec, 1, func(_ context.Context, d decoded) (item, error) {
		if d.dead != "" {
			return item{msg: d.msg, dead: d.dead}, nil
		}
		return item{msg: d.msg, tick: normalise(d.ev)}, nil
	})
	batches := sluice.Batch(p, "collect", norm, 500, 50*time.Millisecond)
	outs := sluice.Map(p, "enrich", batches, 2, func(_ context.Context, b []item) ([]natsx.Out, error) {
		return enrich(b, refs), nil
	})
	natsx.PublishBatches(p, "publish", outs, sink)
	return p
}

// enrich turns a batch into messages to publish, looking up the reference
// data of all its symbols at once.
func enrich(b []item, refs *refService) []natsx.Out {
	syms := make(map[string]refData, len(symbols))
	for _, it := range b {
		if it.dead == "" {
			syms[it.tick.symbol] = refData{}
		}
	}
	refs.Lookup(syms)
	outs := make([]natsx.Out, len(b))
	buf := make([]byte, 0, 96*len(b))
	for i, it := range b {
		id := it.msg.ID()
		reason := it.dead
		var r refData
		if reason == "" {
			var ok bool
			if r, ok = syms[it.tick.symbol]; !ok {
				reason = "unknown symbol"
			}
		}
		if reason != "" {
			outs[i] = natsx.Out{Subject: demoDeadSubj, Data: it.msg.Data(), ID: id, From: it.msg,
				Header: nats.Header{"Demo-Reason": []string{reason}}}
			continue
		}
		n := len(buf)
		buf = encodeEnriched(buf, it.tick, r)
		outs[i] = natsx.Out{Subject: demoOutSubj, Data: buf[n:len(buf):len(buf)], ID: id, From: it.msg}
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
func progress(w io.Writer, start time.Time, done <-chan struct{}, committed, dead *atomic.Int64, lat *hist, src *natsx.Source) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last, lastAt := int64(0), start
	var lastLat histSnapshot
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			c := committed.Load()
			snap := lat.snapshot()
			win := snap.minus(lastLat)
			fmt.Fprintf(w, "%6.1fs  events/s %7s  latency p50 %-7s p99 %-7s  in-flight %6d  dead-lettered %6d  stored %d\n",
				now.Sub(start).Seconds(), si(float64(c-last)/now.Sub(lastAt).Seconds()),
				ms(win.q(0.5)), ms(win.q(0.99)), src.Stats().InFlight, dead.Load(), c)
			last, lastAt, lastLat = c, now, snap
		}
	}
}

// hist is a latency histogram with four buckets per power of two of
// nanoseconds (about 19 % wide), added to a batch at a time.
type hist struct {
	mu     sync.Mutex
	counts [histBuckets]uint64
	max    time.Duration
}

const histBuckets = 64 * 4

func bucket(d time.Duration) int {
	v := uint64(max(d, 1))
	n := bits.Len64(v) // ≥ 1
	if n < 3 {
		return int(v)
	}
	return 4*(n-2) + int(v>>(n-3)&3)
}

// bucketTop is the largest duration that falls in bucket i.
func bucketTop(i int) time.Duration {
	if i < 4 {
		return time.Duration(i)
	}
	n := i/4 + 2
	return time.Duration((uint64(4+i%4+1) << (n - 3)) - 1)
}

func (h *hist) add(c *[histBuckets]uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, v := range c {
		h.counts[i] += v
		if v > 0 {
			h.max = max(h.max, bucketTop(i))
		}
	}
}

type histSnapshot struct {
	counts [histBuckets]uint64
	max    time.Duration
}

func (h *hist) snapshot() histSnapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	return histSnapshot{counts: h.counts, max: h.max}
}

func (s histSnapshot) minus(o histSnapshot) histSnapshot {
	for i := range s.counts {
		s.counts[i] -= o.counts[i]
	}
	return s
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

// q returns the q-quantile: the top of the bucket it falls in.
func (s histSnapshot) q(q float64) time.Duration {
	var total uint64
	for _, c := range s.counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := uint64(q*float64(total) + 0.5)
	var seen uint64
	for i, c := range s.counts {
		seen += c
		if seen >= max(rank, 1) {
			return bucketTop(i)
		}
	}
	return s.max
}
