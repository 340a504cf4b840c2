package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
// enrichment) — fed by the same `sluice gen` child at the same rate, on
// topics and a table of its own (NAME-bare-…). Its latency is from the poll
// that returned a record to the commit of its row in ClickHouse; it is
// judged by the same rule as the pipeline's steps.

// bareStep runs one sustained window of the bare loop at rate.
func bareStep(ctx context.Context, in *interrupts, adm *kadm.Client, db *sql.DB, f demoFlags, rate int, stdout, stderr io.Writer) (sweepStep, error) {
	f.rate = rate
	names := namesFor(f.name + "-bare")
	if err := resetKafka(ctx, adm, f.partitions, names.group, names.in, names.out); err != nil {
		return sweepStep{rate: rate}, err
	}
	if err := createTable(ctx, db, names.table, true); err != nil {
		return sweepStep{rate: rate}, err
	}
	defer func() { // free the space
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = db.ExecContext(cctx, "DROP TABLE IF EXISTS "+names.table)
		_, _ = adm.DeleteTopics(cctx, names.in, names.out)
	}()
	seeds := strings.Split(f.kafka, ",")
	cons, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(names.group),
		kgo.ConsumeTopics(names.in), kgo.DisableAutoCommit())
	if err != nil {
		return sweepStep{rate: rate}, err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(names.out),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		return sweepStep{rate: rate}, err
	}
	defer prod.Close()
	w := clickhousex.NewWriter(db, names.table, kafkaColumns, func(r *kgo.Record) []any {
		return []any{uint64(r.Partition)<<40 | uint64(r.Offset), string(r.Key), int64(0), int64(0), r.Timestamp.UnixNano(),
			int64(0), "", "", "", int64(0)}
	})

	lctx, stopLoop := context.WithCancel(ctx)
	defer stopLoop()
	var (
		mu       sync.Mutex
		lat      latencies
		steady   bool
		consumed atomic.Int64
		loopErr  error
		loopDone = make(chan struct{})
	)
	go func() {
		defer close(loopDone)
		batch := make([]*kgo.Record, 0, 500)
		polled := make([]time.Time, 0, 500)
		outs := make([]*kgo.Record, 0, 500)
		for lctx.Err() == nil {
			batch, polled = batch[:0], polled[:0]
			deadline := time.Now().Add(50 * time.Millisecond)
			for len(batch) < 500 {
				wait := time.Until(deadline)
				if len(batch) == 0 {
					wait = 100 * time.Millisecond
				}
				if wait <= 0 {
					break
				}
				pctx, cancel := context.WithTimeout(lctx, wait)
				fs := cons.PollRecords(pctx, 500-len(batch))
				cancel()
				if lctx.Err() != nil {
					return
				}
				if err := fatalFetchErr(fs); err != nil {
					loopErr = err
					return
				}
				now := time.Now()
				if len(batch) == 0 {
					if fs.NumRecords() == 0 {
						break
					}
					deadline = now.Add(50 * time.Millisecond)
				}
				fs.EachRecord(func(r *kgo.Record) { batch, polled = append(batch, r), append(polled, now) })
			}
			if len(batch) == 0 {
				continue
			}
			if err := w.Write(lctx, batch); err != nil {
				loopErr = err
				return
			}
			now := time.Now()
			mu.Lock()
			if steady {
				for _, p := range polled {
					lat.add(now.Sub(p))
				}
			}
			mu.Unlock()
			outs = outs[:0]
			for _, r := range batch {
				outs = append(outs, &kgo.Record{Key: r.Key, Value: r.Value})
			}
			if err := prod.ProduceSync(lctx, outs...).FirstErr(); err != nil {
				loopErr = err
				return
			}
			if err := cons.CommitRecords(lctx, batch...); err != nil {
				loopErr = err
				return
			}
			consumed.Add(int64(len(batch)))
		}
	}()
	stop := func() error {
		stopLoop()
		<-loopDone
		return loopErr
	}

	s := &sustainedRun{f: f, names: names, adm: adm, in: in, stdout: stdout, stderr: stderr}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-loopDone:
			close(stopped)
		case <-ctx.Done():
		}
	}()
	if err := s.awaitAssigned(stopped); err != nil {
		return sweepStep{rate: rate}, errors.Join(err, stop())
	}
	c, err := s.startGen()
	if err != nil {
		return sweepStep{rate: rate}, errors.Join(err, stop())
	}
	defer c.end()
	in.OnExit(func() { c.cmd.Process.Kill() })
	mu.Lock()
	steady = true
	mu.Unlock()
	wstart := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	drain := in.Draining()
window:
	for {
		select {
		case <-c.exited:
			break window
		case <-loopDone:
			return sweepStep{rate: rate}, fmt.Errorf("bare loop: %w", stop())
		case <-drain.Done():
			c.end()
			return sweepStep{rate: rate, why: "interrupted"}, stop()
		case now := <-tick.C:
			n, err := s.endOffsets()
			if err != nil {
				return sweepStep{rate: rate}, errors.Join(err, stop())
			}
			s.samples = append(s.samples, lagSample{now.Sub(wstart), n - consumed.Load()})
		}
	}
	n, err := s.endOffsets()
	if err != nil {
		return sweepStep{rate: rate}, errors.Join(err, stop())
	}
	s.window, s.produced, s.storedWin = time.Since(wstart), n, consumed.Load()
	s.samples = append(s.samples, lagSample{s.window, n - s.storedWin})
	mu.Lock()
	steady = false
	s.cons = lat
	mu.Unlock()
	if c.err != nil {
		return sweepStep{rate: rate}, errors.Join(fmt.Errorf("generator: %w", c.err), stop())
	}
	// drain what is left, so that the next step starts on an idle broker
	deadline := time.Now().Add(60 * time.Second)
drained:
	for consumed.Load() < n && time.Now().Before(deadline) && drain.Err() == nil {
		select {
		case <-loopDone:
			break drained
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := stop(); err != nil {
		return sweepStep{rate: rate}, fmt.Errorf("bare loop: %w", err)
	}
	st := stepOf(s)
	fmt.Fprintf(stdout, "bare loop at %d events/s: window %.2fs, in %s/s, stored %s/s, consume → CH p50 %s p99 %s max %s, lag at end %d: pass %s (%s)\n",
		rate, s.window.Seconds(), si(st.in), si(st.stored), ms(st.p50), ms(st.p99), ms(st.max), st.lag, yesNo(st.pass), st.why)
	return st, nil
}

// bareRunner holds the connections the bare loop's steps share.
type bareRunner struct {
	db    *sql.DB
	admCl *kgo.Client
	adm   *kadm.Client
}

func openBare(ctx context.Context, f demoFlags) (*bareRunner, error) {
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

func (b *bareRunner) close() {
	b.admCl.Close()
	b.db.Close()
}
