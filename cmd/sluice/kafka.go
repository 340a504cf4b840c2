package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"maps"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/internal/cli"
	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"github.com/sluicehq/sluice/connect/kafkax"
)

// kafkaResult is what one run of the Kafka pipeline did.
type kafkaResult struct {
	settled, stored, dead int64
	reasons               map[string]int64
	wall                  time.Duration
	lat                   market.Latencies // consumed → row committed in ClickHouse
	src                   kafkax.SourceStats
	stages                sluice.Snapshot
	drained               error // the signal that drained the run, or nil
	commitErr             error // the final offset commit's
}

// kafkaTally is what the store stage measured, under mu.
type kafkaTally struct {
	mu          sync.Mutex
	lat, window market.Latencies // consumed → committed: the whole run, since the last line
	reasons     map[string]int64
}

// runKafka runs the market pipeline on Kafka and ClickHouse until target
// records are settled (0: until drain), or until drain: then it drains
// (takes no new record, stores and commits those inside). It prints a
// line each second in which records were settled. show gets the pipeline
// before it runs.
func runKafka(ctx, drain context.Context, db *sql.DB, cfg onkafka.KafkaConfig, target int64, show func(*sluice.Pipeline), stdout io.Writer) (res kafkaResult, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	t := &kafkaTally{reasons: map[string]int64{}}
	cfg.OnStored = func(rows []onkafka.Row, at time.Time) {
		t.mu.Lock()
		defer t.mu.Unlock()
		for i := range rows {
			d := at.Sub(rows[i].Received())
			t.lat.Add(d)
			t.window.Add(d)
		}
	}
	cfg.OnDead = func(reason string) {
		t.mu.Lock()
		t.reasons[reason]++
		t.mu.Unlock()
	}
	k, err := onkafka.StartKafka(ctx, db, cfg)
	if err != nil {
		return res, err
	}
	p := k.Pipeline
	p.DrainOn(drain)
	complete, finish := context.WithCancel(ctx)
	defer finish()
	p.DrainOn(complete)
	show(p)
	start := time.Now()
	var doneAt time.Time
	stopped, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		last, lastAt, nextLine := int64(0), start, start.Add(time.Second)
		for {
			select {
			case <-stopped:
				return
			case now := <-tick.C:
				settled := k.Source.Stats().Acked
				if target > 0 && doneAt.IsZero() && settled >= target {
					doneAt = now
					finish()
				}
				if now.Before(nextLine) {
					continue
				}
				nextLine = nextLine.Add(time.Second)
				t.mu.Lock()
				win := t.window
				t.window = market.Latencies{}
				t.mu.Unlock()
				if settled > last {
					fmt.Fprintf(stdout, "%6.1fs  %7s events/s  consumed → stored p50 %-6s p99 %-6s  in flight %5d  dead-lettered %6d  stored %d\n",
						now.Sub(start).Seconds(), market.SI(float64(settled-last)/now.Sub(lastAt).Seconds()),
						market.Ms(win.Q(0.5)), market.Ms(win.Q(0.99)), k.Source.Stats().InFlight, k.Dead(), k.Stored())
				}
				last, lastAt = settled, now
			}
		}
	}()
	werr := p.Wait()
	close(stopped)
	<-exited
	res.wall = time.Since(start)
	if !doneAt.IsZero() {
		res.wall = doneAt.Sub(start) // not counting the drain's end
	}
	res.commitErr = k.Close()
	if werr != nil {
		return res, werr
	}
	if drain.Err() != nil {
		res.drained = context.Cause(drain)
	}
	res.src, res.stages = k.Source.Stats(), p.Stats()
	res.settled, res.stored, res.dead = res.src.Acked, k.Stored(), k.Dead()
	t.mu.Lock()
	res.lat, res.reasons = t.lat, maps.Clone(t.reasons)
	t.mu.Unlock()
	return res, nil
}

// print writes the run's summary: what was stored where, the latency,
// and the stages.
func (r kafkaResult) print(w io.Writer, names onkafka.Names, what string) {
	fmt.Fprintln(w)
	if r.drained != nil {
		fmt.Fprintf(w, "interrupted (%v), drained: of the %d records the pipeline had received, %d were stored or dead-lettered and committed, %d left unsettled (read again by the next run)\n",
			r.drained, r.src.Received, r.src.Acked, r.src.InFlight)
	}
	fmt.Fprintf(w, "%s: %d events through the pipeline in %.2f s, %s events/s\n\n",
		what, r.settled, r.wall.Seconds(), market.SI(float64(r.settled)/r.wall.Seconds()))
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(t, "  stored\t%d\trows inserted into ClickHouse table %s, records produced to %s\n", r.stored, names.Table, names.Out)
	fmt.Fprintf(t, "  dead-lettered\t%d\trecords produced to %s with their reason%s\n", r.dead, names.Dead, cli.Reasons(r.reasons))
	if s := r.src; s.TxnCommitted+s.TxnAborted > 0 {
		mean := func(d time.Duration) string { return market.Ms(d / time.Duration(max(s.TxnCommitted, 1))) }
		fmt.Fprintf(t, "  transactions\t%d\tcommitted (epochs of %s on average, %s to commit each), %d aborted (their inputs delivered again)\n",
			s.TxnCommitted, mean(s.TxnEpochTime), mean(s.TxnCommitTime), s.TxnAborted)
	}
	fmt.Fprintf(t, "  time per event\tp50 %s  p99 %s  max %s\tconsumed from Kafka → row committed in ClickHouse\n",
		market.Ms(r.lat.Q(0.5)), market.Ms(r.lat.Q(0.99)), market.Ms(r.lat.Max()))
	t.Flush()
	if r.commitErr != nil {
		fmt.Fprintf(w, "  the last offset commit failed, so those records will be read again: %v\n", r.commitErr)
	}
	fmt.Fprintln(w)
	cli.PrintStages(w, r.stages)
}
