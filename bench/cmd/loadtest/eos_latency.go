package main

// The latency half of `loadtest kafka --exactly-once`: records at a
// sustained rate, and a read-committed verifier of the output.

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/connect/kafkax"
)

// latencyRun is what a run at a sustained rate measured.
type latencyRun struct {
	src        kafkax.SourceStats
	produced   int64
	seen       int64 // distinct records of the window seen by the verifier
	duplicates int64
	missing    int64
	lat        market.Latencies // stamped → visible, over the window
	genRate    float64          // what the generator reached over the window
}

func (r latencyRun) print(w io.Writer, m eosMode, f kafkaFlags) {
	fmt.Fprintf(w, "  %-34s p50 %-7s p99 %-7s max %-7s  (%d records in the window, generator at %s/s; %d missing, %d duplicates)\n",
		m.name, ms(r.lat.Q(0.5)), ms(r.lat.Q(0.99)), ms(r.lat.Max()), r.seen, si(r.genRate), r.missing, r.duplicates)
	if t := txnFigures(r.src); t != "" {
		target := f.epoch + 50*time.Millisecond
		fmt.Fprintf(w, "  %-34s %s; p99 %s against the target epoch + 50 ms = %s: %s\n", "", t, ms(r.lat.Q(0.99)), ms(target), met(r.lat.Q(0.99) <= target))
	}
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// latencyAtRate runs mode's pipeline over topic in while a generator
// produces f.rate records/s for f.warmup + f.duration, tagged run; a
// read-committed consumer of out measures when each record of the window
// becomes visible.
func latencyAtRate(ctx context.Context, f kafkaFlags, mode eosMode, in, out string, run uint64, stdout io.Writer) (latencyRun, error) {
	var res latencyRun
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	v, err := startVerifier(ctx, f.kafka, out, run)
	if err != nil {
		return res, err
	}
	defer v.stop()
	c, err := startCopy(ctx, f, mode, in, out, fmt.Sprintf("%s-eos-rate-%d-%d", f.name, run, time.Now().UnixNano()))
	if err != nil {
		return res, err
	}
	pipeCtx, stopPipe := context.WithCancel(ctx)
	defer stopPipe()
	c.p.DrainOn(pipeCtx)
	werr := make(chan error, 1)
	go func() { werr <- c.p.Wait() }()

	g, err := generate(ctx, f.kafka, in, run, f.rate, f.warmup, f.duration)
	if err != nil {
		stopPipe()
		<-werr
		c.close()
		return res, fmt.Errorf("generator: %w", err)
	}
	res.produced = g.total
	res.genRate = float64(g.total-g.windowFirst) / f.duration.Seconds()
	// Wait until the verifier has seen every record, or for 60s.
	deadline := time.Now().Add(60 * time.Second)
	for v.count(g.windowFirst, g.total) < g.total-g.windowFirst && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	stopPipe()
	perr := <-werr
	cerr := c.close()
	if perr != nil || cerr != nil {
		return res, fmt.Errorf("pipeline: %v; close: %v", perr, cerr)
	}
	v.stop()
	res.src = c.src.Stats()
	res.lat, res.seen, res.duplicates = v.results(g.windowFirst, g.total)
	res.missing = (g.total - g.windowFirst) - res.seen
	return res, nil
}

// genRun is what the rate generator produced: total records, of which
// those from windowFirst on fall in the window.
type genRun struct{ total, windowFirst int64 }

// generate produces records of run to topic at rate for warmup, then for
// window, in bursts every burstEvery.
func generate(ctx context.Context, brokers, topic string, run uint64, rate int, warmup, window time.Duration) (genRun, error) {
	var g genRun
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(max(20000, rate)))
	if err != nil {
		return g, err
	}
	defer cl.Close()
	var failed atomic.Int64
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
		}
	}
	total := warmup + window
	g.windowFirst = due(rate, warmup, total)
	tick := time.NewTicker(burstEvery)
	defer tick.Stop()
	start := time.Now()
	for ctx.Err() == nil {
		elapsed := time.Since(start)
		for n := due(rate, elapsed, total); g.total < n; g.total++ {
			seq := uint64(g.total)
			cl.Produce(ctx, &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, seq), Value: eosValue(nil, run, seq)}, promise)
		}
		if elapsed >= total {
			break
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return g, err
	}
	if n := failed.Load(); n > 0 {
		return g, fmt.Errorf("%d records not stored", n)
	}
	return g, ctx.Err()
}

// verifier reads a topic from its end with read-committed isolation and
// notes, for each record of its run, when it became visible.
type verifier struct {
	cl   *kgo.Client
	run  uint64
	done chan struct{}
	once sync.Once
	quit context.CancelFunc

	mu   sync.Mutex
	seen map[uint64]time.Duration // seq → stamped → visible
	dups int64
}

func startVerifier(ctx context.Context, brokers, topic string, run uint64) (*verifier, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return nil, err
	}
	ctx, quit := context.WithCancel(ctx)
	v := &verifier{cl: cl, run: run, done: make(chan struct{}), quit: quit, seen: map[uint64]time.Duration{}}
	// Resolve the end offsets before the pipeline produces anything.
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		quit()
		return nil, err
	}
	go v.loop(ctx)
	return v, nil
}

func (v *verifier) loop(ctx context.Context) {
	defer close(v.done)
	for ctx.Err() == nil {
		fs := v.cl.PollFetches(ctx)
		now := time.Now().UnixNano()
		v.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Value) < eosHeader || binary.BigEndian.Uint64(r.Value) != v.run {
				return
			}
			seq := binary.BigEndian.Uint64(r.Value[8:])
			stamped := int64(binary.BigEndian.Uint64(r.Value[24:]))
			if _, ok := v.seen[seq]; ok {
				v.dups++
				return
			}
			v.seen[seq] = time.Duration(now - stamped)
		})
		v.mu.Unlock()
	}
}

// count returns how many records with sequence numbers in [from, to)
// were seen.
func (v *verifier) count(from, to int64) int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	var n int64
	for seq := range v.seen {
		if int64(seq) >= from && int64(seq) < to {
			n++
		}
	}
	return n
}

// results returns the latencies of the records with sequence numbers in
// [from, to), how many of them were seen, and the duplicates of any.
func (v *verifier) results(from, to int64) (lat market.Latencies, seen, dups int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for seq, d := range v.seen {
		if int64(seq) >= from && int64(seq) < to {
			lat.Add(d)
			seen++
		}
	}
	return lat, seen, v.dups
}

func (v *verifier) stop() {
	v.once.Do(func() {
		v.quit()
		<-v.done
		v.cl.Close()
	})
}
