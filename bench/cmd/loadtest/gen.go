package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/sluicehq/sluice/bench/internal/cli"
	"github.com/sluicehq/sluice/cmd/sluice/market"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// `loadtest gen` is the sustained demo's load generator: a process of its
// own, so that the pipeline's CPU accounting is the pipeline's alone. It
// produces market events to a topic at --rate for --duration, paced by a
// ticker in small bursts; each event's timestamp field is the time it was
// handed to the producer (its produce time), from which the demo measures
// produced → committed.

// maxRate is the most events per second gen and demo accept: far above
// what one machine produces, so a larger figure is a typo.
const maxRate = 10_000_000

// maxDuration is the longest --duration accepted.
const maxDuration = 24 * time.Hour

// genFlags are the flags of `loadtest gen`.
type genFlags struct {
	kafka, topic string
	rate         int
	duration     time.Duration
	malformed    float64
	firstID      int
	seed         uint64
	times        market.EventTimes // the event times: produce times lagged
	stdinEOF     bool              // stop when stdin reaches EOF (the parent is gone)
	quiet        bool
}

// genUsage heads `loadtest gen -h`; the flags follow it.
const genUsage = `usage: loadtest gen --kafka BROKERS --topic TOPIC --rate R --duration D [flags]

Produces market events (id,symbol,price,size,event-time-ns; some
malformed; the event time is the produce time lagged by up to --disorder,
and by --late-by more for a fraction --late of the events, each lag a
function of the id and --seed) to TOPIC at R events per second for D, in bursts every 5 ms,
and waits for the broker to acknowledge them. Prints a line a second
(produced, acknowledged) and, at the end:

  gen: produced N events in Ds = R events/s (target T/s); acknowledged N; failed 0

SIGINT or SIGTERM stops producing early; what was handed over is flushed.`

func runGen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loadtest gen", flag.ContinueOnError)
	var f genFlags
	fs.StringVar(&f.kafka, "kafka", "", "Kafka `BROKERS` (host:port,…) to produce to")
	fs.StringVar(&f.topic, "topic", "", "`TOPIC` to produce market events to (keyed by symbol)")
	fs.IntVar(&f.rate, "rate", 0, "events per second to produce (1 to 10M)")
	fs.DurationVar(&f.duration, "duration", 0, "how long to produce (> 0, at most 24h)")
	fs.Float64Var(&f.malformed, "malformed", 0.01, "fraction of events that are malformed")
	fs.IntVar(&f.firstID, "first-id", 0, "id of the first event; the next ones count up")
	fs.Uint64Var(&f.seed, "seed", 4, "seed of the event generator")
	f.times = market.DefaultEventTimes()
	fs.DurationVar(&f.times.Disorder, "disorder", f.times.Disorder, "most an on-time event's event time lags its produce time (uniform)")
	fs.Float64Var(&f.times.Late, "late", f.times.Late, "fraction of events that are late")
	fs.DurationVar(&f.times.LateBy, "late-by", f.times.LateBy, "how much more a late event lags")
	fs.BoolVar(&f.stdinEOF, "exit-on-stdin-eof", false, "stop producing once stdin reaches EOF (how `loadtest kafka` ends the generator it starts if it dies)")
	fs.BoolVar(&f.quiet, "quiet", false, "no per-second lines")
	if _, code, ok := cli.Parse(fs, genUsage, false, args, stdout, stderr); !ok {
		return code
	}
	if msg := f.check(); msg != "" {
		fmt.Fprintln(stderr, "loadtest gen:", msg)
		return 2
	}
	in := catchSignals(stderr)
	defer in.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer context.AfterFunc(in.Draining(), cancel)()
	if f.stdinEOF {
		go func() { // ends with the process: a read of stdin cannot be cancelled
			io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
	}
	res, err := generateAt(ctx, f, stdout)
	res.print(stdout, f)
	if err != nil {
		fmt.Fprintln(stderr, "loadtest gen:", err)
		return 1
	}
	return 0
}

// check returns what is wrong with the flags, or "".
func (f genFlags) check() string {
	switch {
	case f.kafka == "" || f.topic == "":
		return "--kafka and --topic are required"
	case checkRate(f.rate) != "":
		return checkRate(f.rate)
	case f.duration <= 0 || f.duration > maxDuration:
		return fmt.Sprintf("--duration must be > 0 and at most %s, got %s", maxDuration, f.duration)
	case checkMalformed(f.malformed) != "":
		return checkMalformed(f.malformed)
	case f.firstID < 0:
		return fmt.Sprintf("--first-id must be ≥ 0, got %d", f.firstID)
	case f.times.Disorder < 0 || f.times.LateBy < 0 || !(f.times.Late >= 0 && f.times.Late <= 1):
		return fmt.Sprintf("--disorder and --late-by must be ≥ 0 and --late in [0, 1], got %v, %v, %v", f.times.Disorder, f.times.LateBy, f.times.Late)
	}
	return ""
}

// genResult is what one generator run did.
type genResult struct {
	produced, acked, failed int64
	wall                    time.Duration // from the first burst to the last
	firstErr                error
}

func (r genResult) print(w io.Writer, f genFlags) {
	fmt.Fprintf(w, "gen: produced %d events in %.2fs = %s events/s (target %s/s); acknowledged %d; failed %d\n",
		r.produced, r.wall.Seconds(), si(float64(r.produced)/max(r.wall.Seconds(), 1e-9)), si(float64(f.rate)), r.acked, r.failed)
}

// burstEvery is the generator's pacing tick.
const burstEvery = 5 * time.Millisecond

// due is how many events a generator at rate events/s should have produced
// elapsed into its run, capped at the run's total.
func due(rate int, elapsed, total time.Duration) int64 {
	elapsed = min(max(elapsed, 0), total)
	return int64(float64(rate) * elapsed.Seconds())
}

// generateAt produces at f.rate for f.duration, or until ctx ends, then
// flushes; it returns what it produced and the broker acknowledged.
func generateAt(ctx context.Context, f genFlags, stdout io.Writer) (genResult, error) {
	var res genResult
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f.kafka, ",")...), kgo.DefaultProduceTopic(f.topic),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(max(20000, f.rate)))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	var acked, failed atomic.Int64
	var mu sync.Mutex
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.Add(1)
			mu.Lock()
			if res.firstErr == nil {
				res.firstErr = err
			}
			mu.Unlock()
			return
		}
		acked.Add(1)
	}
	rng := rand.New(rand.NewPCG(f.seed, f.seed))
	times := f.times
	times.Seed = f.seed
	tick := time.NewTicker(burstEvery)
	defer tick.Stop()
	start := time.Now()
	nextLine := start.Add(time.Second)
	var sent int64
	var buf []byte
loop:
	for {
		now := time.Now()
		for n := due(f.rate, now.Sub(start), f.duration); sent < n; sent++ {
			id := f.firstID + int(sent)
			buf = market.Generate(buf[:0], rng, id, times.At(uint64(id), time.Now().UnixNano()), f.malformed)
			v := append([]byte(nil), buf...)
			// Not ctx: what is handed over is flushed, even after a signal.
			cl.Produce(context.Background(), &kgo.Record{Key: market.EventKey(v), Value: v}, promise)
		}
		if !f.quiet && now.After(nextLine) {
			fmt.Fprintf(stdout, "gen: %6.1fs  produced %d  acknowledged %d\n", now.Sub(start).Seconds(), sent, acked.Load())
			nextLine = nextLine.Add(time.Second)
		}
		if now.Sub(start) >= f.duration {
			break
		}
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
		}
	}
	res.wall = time.Since(start)
	fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ferr := cl.Flush(fctx)
	res.produced, res.acked, res.failed = sent, acked.Load(), failed.Load()
	mu.Lock()
	defer mu.Unlock()
	switch {
	case ferr != nil:
		return res, fmt.Errorf("flushing: %w", ferr)
	case res.firstErr != nil:
		return res, fmt.Errorf("%d of %d events not stored: %w", res.failed, res.produced, res.firstErr)
	}
	return res, nil
}
