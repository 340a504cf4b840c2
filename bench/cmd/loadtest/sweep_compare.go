package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/clickhousex"
)

// --sweep with --compare: at each rate, the same sustained window for a
// bare hand-written loop on the same brokers — the loop of the backlog
// mode's ceiling (poll up to 500 records or 50 ms → insert into ClickHouse
// → produce, acks from all replicas → commit offsets; no decoding, no
// enrichment) — fed by the same `loadtest gen` child at the same rate, on
// topics and a table of its own (NAME-bare-…). Its latency is from the poll
// that returned a record to the commit of its row in ClickHouse; it is
// judged by the same rule as the pipeline's steps.

// bareStep runs one sustained window of the bare loop at rate.
func bareStep(ctx context.Context, in *interrupts, adm *kadm.Client, db *sql.DB, f kafkaFlags, rate int, stdout, stderr io.Writer) (sweepStep, error) {
	f.rate = rate
	names := onkafka.NamesFor(f.name + "-bare")
	drop, err := freshBare(ctx, adm, db, f.partitions, names)
	if err != nil {
		return sweepStep{rate: rate}, err
	}
	defer drop()
	l, err := openBareLoop(f.kafka, names, db)
	if err != nil {
		return sweepStep{rate: rate}, err
	}
	defer l.close()
	r := startBareRun(ctx, l)
	s := &sustainedRun{f: f, names: names, adm: adm, in: in, stdout: stdout, stderr: stderr}
	err = s.bareWindow(ctx, r)
	if errors.Is(err, errInterrupted) {
		return sweepStep{rate: rate, why: "interrupted"}, r.stop()
	}
	if err != nil {
		return sweepStep{rate: rate}, errors.Join(err, r.stop())
	}
	if err := r.stop(); err != nil {
		return sweepStep{rate: rate}, fmt.Errorf("bare loop: %w", err)
	}
	st := stepOf(s)
	fmt.Fprintf(stdout, "bare loop at %d events/s: warm-up %s (not counted), window %.2fs, in %s/s, stored %s/s, consume → CH p50 %s p99 %s max %s, lag at end %d, CPU %.1f µs per event: pass %s (%s)\n",
		rate, f.warmup, s.window.Seconds(), si(st.in), si(st.stored), ms(st.p50), ms(st.p99), ms(st.max), st.lag, st.cpu, yesNo(st.pass), st.why)
	return st, nil
}

var errInterrupted = errors.New("interrupted")

// bareRun is a bare loop running in a goroutine of its own, measuring its
// latency (poll → row committed in ClickHouse) while steady.
type bareRun struct {
	l        *bareLoop
	halt     context.CancelFunc
	done     chan struct{} // closed when the loop returned
	err      error         // the loop's, set before done closes
	consumed atomic.Int64  // records inserted, produced and committed

	mu     sync.Mutex
	steady bool
	lat    market.Latencies
}

func startBareRun(ctx context.Context, l *bareLoop) *bareRun {
	ctx, halt := context.WithCancel(ctx)
	r := &bareRun{l: l, halt: halt, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = r.loop(ctx)
	}()
	return r
}

func (r *bareRun) loop(ctx context.Context) error {
	l := r.l
	for {
		if err := l.poll(ctx, 100*time.Millisecond); err != nil {
			if ctx.Err() != nil {
				return nil // halted
			}
			return err
		}
		if len(l.batch) == 0 {
			continue
		}
		if err := l.insert(ctx); err != nil {
			return err
		}
		now := time.Now()
		r.mu.Lock()
		if r.steady {
			for _, p := range l.polled {
				r.lat.Add(now.Sub(p))
			}
		}
		r.mu.Unlock()
		if err := l.forward(ctx); err != nil {
			return err
		}
		r.consumed.Add(int64(len(l.batch)))
	}
}

// setSteady turns the measuring on or off, and returns what it measured.
func (r *bareRun) setSteady(on bool) market.Latencies {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steady = on
	return r.lat
}

// stop halts the loop, waits for it and returns its error.
func (r *bareRun) stop() error {
	r.halt()
	<-r.done
	return r.err
}

// bareWindow runs a bare step's generator, warm-up and window, then waits
// until the loop has consumed what is left (at most 60 s), so that the
// next step starts on an idle broker. errInterrupted: a signal came.
func (s *sustainedRun) bareWindow(ctx context.Context, r *bareRun) error {
	stopped := make(chan struct{})
	go func() {
		select {
		case <-r.done:
			close(stopped)
		case <-ctx.Done():
		}
	}()
	if err := s.awaitAssigned(stopped); err != nil {
		return err
	}
	c, err := s.startGen()
	if err != nil {
		return err
	}
	defer c.end()
	s.in.OnExit(func() { c.cmd.Process.Kill() })
	warm := time.After(s.f.warmup)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	drain := s.in.Draining()
	for open := true; open; {
		select {
		case <-c.exited:
			open = false
		case <-r.done:
			return errors.New("the bare loop ended during the window")
		case <-drain.Done():
			return errInterrupted
		case now := <-warm:
			if err = s.openWindow(now, r.consumed.Load()); err != nil {
				return err
			}
			r.setSteady(true)
		case now := <-tick.C:
			n, err := s.endOffsets()
			if err != nil {
				return err
			}
			s.sample(now, n-r.consumed.Load())
		}
	}
	n, err := s.endOffsets()
	if err != nil {
		return err
	}
	done := r.consumed.Load()
	s.closeWindow(time.Now(), n, done, done)
	s.cons = r.setSteady(false)
	if c.err != nil {
		return fmt.Errorf("generator: %w", c.err)
	}
	for deadline := time.Now().Add(60 * time.Second); r.consumed.Load() < n && time.Now().Before(deadline) && drain.Err() == nil; {
		select {
		case <-r.done:
			return nil
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// bareRunner holds the connections the bare loop's steps share.
type bareRunner struct {
	db    *sql.DB
	admCl *kgo.Client
	adm   *kadm.Client
}

func openBare(ctx context.Context, f kafkaFlags) (*bareRunner, error) {
	db, err := clickhousex.Open(ctx, f.clickhouse)
	if err != nil {
		return nil, err
	}
	admCl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f.kafka, ",")...))
	if err != nil {
		db.Close()
		return nil, err
	}
	return &bareRunner{db: db, admCl: admCl, adm: kadm.NewClient(admCl)}, nil
}

// step runs one sustained window of the bare loop at rate.
func (b *bareRunner) step(ctx context.Context, in *interrupts, f kafkaFlags, rate int, stdout, stderr io.Writer) sweepStep {
	st, err := bareStep(ctx, in, b.adm, b.db, f, rate, stdout, stderr)
	return failedStep(st, err)
}

func (b *bareRunner) close() {
	b.admCl.Close()
	b.db.Close()
}
