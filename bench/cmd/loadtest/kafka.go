package main

import (
	"context"
	"database/sql"
	"fmt"
	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"io"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/clickhousex"
	"github.com/sluicehq/sluice/connect/kafkax"
)

// The Kafka + ClickHouse load test: onkafka.StartKafka's pipeline on real
// brokers, over a backlog (the default), at a sustained rate (--rate and
// --duration, sustained.go) or swept over rates (--sweep, sweep.go).

// demoKafka runs `loadtest kafka`.
func demoKafka(ctx context.Context, in *interrupts, f kafkaFlags, stdout, stderr io.Writer) error {
	drain := in.Draining()
	names := onkafka.NamesFor(f.name)
	fmt.Fprintf(stdout, "conditions: %s\n", conditions())
	fmt.Fprintf(stdout, "Kafka at %s, ClickHouse at %s; topics %s → %s (dead letters %s), group %s, table %s\n",
		f.kafka, f.clickhouse, names.In, names.Out, names.Dead, names.Group, names.Table)
	db, err := clickhousex.Open(ctx, f.clickhouse)
	if err != nil {
		return err
	}
	defer db.Close()
	admCl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f.kafka, ",")...))
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)

	var ceiling float64
	if f.compare {
		var ran bool
		ceiling, ran, err = runCeilingFirst(ctx, drain, stdout, "ceiling (bare loop: poll 500 records or 50 ms → insert into ClickHouse → produce, acks from all replicas → commit offsets)",
			func(ctx context.Context) (ceilResult, error) { return runKafkaCeiling(ctx, adm, db, f) })
		if !ran {
			return err
		}
	}

	res := kafkaResult{bars: newBarsLab(f)}
	if err := prepareKafka(ctx, adm, db, names, f, res.bars); err != nil {
		return err
	}
	if res.bars != nil {
		fmt.Fprintf(stdout, "bars: per symbol, one-second bars by event time into table %s and topic %s, late events to %s, checked at the end against a plain loop's (--bars=false: none)\n",
			res.bars.names.Table, res.bars.names.Topic, res.bars.names.Late)
	}
	var sustained *sustainedRun
	if f.rate > 0 {
		sustained = &sustainedRun{f: f, names: names, adm: adm, in: in, stdout: stdout, stderr: stderr, bars: res.bars}
		fmt.Fprintf(stdout, "sustained: the pipeline starts, then `loadtest gen` (a process of its own) produces %d events/s for %s to %s\n",
			f.rate, f.duration, names.In)
	} else {
		if ran, err := generateBacklog(ctx, drain, names, f, stdout, &res); !ran {
			return err
		}
		if res.flushed, err = res.bars.flush(ctx, f.kafka); err != nil {
			return err
		}
	}
	stopProfile, err := profile(f.pipeFlags)
	if err != nil {
		return err
	}
	var watch watcher
	if sustained != nil {
		watch = sustained.watch
	}
	err = runKafkaMarket(ctx, drain, db, names, f, stdout, &res, watch)
	stopProfile()
	res.bars.stopProbe() // if the window was interrupted before the flush
	if err != nil {
		return err
	}
	res.print(stdout, f)
	if sustained != nil {
		sustained.print(stdout)
		if sustained.err != nil {
			return sustained.err
		}
	}
	if res.bars != nil {
		res.bars.print(stdout, sustained == nil)
		if res.drained != nil {
			fmt.Fprintln(stdout, "bars not checked: the run was interrupted, and the windows still open are left unsettled")
		} else if err := res.bars.check(ctx, db, f.kafka, stdout); err != nil {
			return err
		}
	}
	if f.compare && ceiling > 0 {
		fmt.Fprintf(stdout, "demo / ceiling: %s / %s events/s = %.0f %% (target ≥ 90 %%)\n", si(res.perSec()), si(ceiling), 100*res.perSec()/ceiling)
	}
	if res.drained == nil && res.rows != res.stored {
		return fmt.Errorf("ClickHouse holds %d rows in %s, but the pipeline stored %d", res.rows, names.Table, res.stored)
	}
	return nil
}

// prepareKafka deletes and re-creates the topics and the tables, empty:
// the bars' too unless bars is nil.
func prepareKafka(ctx context.Context, adm *kadm.Client, db *sql.DB, names onkafka.Names, f kafkaFlags, bars *barsLab) error {
	topics := append([]string{names.In, names.Out, names.Dead}, bars.topics()...)
	if err := onkafka.ResetTopics(ctx, adm, f.partitions, names.Group, topics...); err != nil {
		return err
	}
	if bars != nil {
		if err := onkafka.CreateBarsTable(ctx, db, bars.names.Table, true); err != nil {
			return err
		}
	}
	return onkafka.CreateTable(ctx, db, names.Table, true)
}

// generateBacklog fills the input topic before the pipeline starts (the
// backlog mode). ran is false when the pipeline must not run: err, or nil
// after drain (a signal) stopped the generator.
func generateBacklog(ctx, drain context.Context, names onkafka.Names, f kafkaFlags, stdout io.Writer, res *kafkaResult) (ran bool, err error) {
	gctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(drain, stop)()
	start, m := time.Now(), startMeasure()
	n, err := onkafka.Produce(gctx, f.kafka, names.In, 0, f.events, f.malformed)
	res.generated, res.genWall, res.genCPU = n, time.Since(start), m.stop().CPU()
	if drain.Err() != nil {
		fmt.Fprintf(stdout, "interrupted (%v) while generating: %d events in %s; the pipeline did not run\n", context.Cause(drain), n, names.In)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("generator: %w", err)
	}
	fmt.Fprintf(stdout, "generator: %d events produced to %s in %.2fs = %s events/s (before the pipeline starts)\n",
		n, names.In, res.genWall.Seconds(), si(float64(n)/res.genWall.Seconds()))
	return true, nil
}

// kafkaResult is what one Kafka demo run measured.
type kafkaResult struct {
	generated int64
	flushed   int64    // the bars' flush events, after the generated ones
	bars      *barsLab // nil: no bars
	genWall   time.Duration
	consumed  int64 // settled records: stored, or dead-lettered
	stored    int64 // rows this run committed in ClickHouse
	dead      int64
	reasons   map[string]int64
	rows      int64 // count() of the table, queried back
	ids       int64 // distinct ids in the table
	wall      time.Duration
	lat       market.Latencies
	genCPU    time.Duration // this process, while generating
	pipeCPU   time.Duration // this process, during the pipeline
	procCPU   time.Duration // this process, generator and pipeline
	machCPU   time.Duration // every process on the machine, during the pipeline
	src       kafkax.SourceStats
	sink      kafkax.SinkStats
	writer    clickhousex.WriterStats
	snap      sluice.Snapshot
	drained   error
	commitErr error
}

func (r kafkaResult) perSec() float64 { return float64(r.consumed) / r.wall.Seconds() }

func (r kafkaResult) print(w io.Writer, f kafkaFlags) {
	names := onkafka.NamesFor(f.name)
	if r.drained != nil {
		fmt.Fprintf(w, "interrupted (%v): drained: the source took no new records; of the %d it had received, %d were stored or dead-lettered and committed, %d unsettled (read again by the next run)\n",
			r.drained, r.src.Received, r.src.Acked, r.src.InFlight)
	}
	if f.rate > 0 {
		fmt.Fprint(w, "whole run, warm-up, window and drain (not a sustained figure; see the sustained window below): ")
	}
	fmt.Fprintf(w, "demo: %d events in %.2fs = %s events/s; %d stored in ClickHouse and produced to %s, %d dead-lettered to %s %v\n",
		r.consumed, r.wall.Seconds(), si(r.perSec()), r.stored, names.Out, r.dead, names.Dead, r.reasons)
	fmt.Fprintf(w, "latency, consumed → committed in ClickHouse: p50 %s  p99 %s  max %s\n", ms(r.lat.Q(0.5)), ms(r.lat.Q(0.99)), ms(r.lat.Max()))
	check := "equal to the rows this run stored"
	if r.rows != r.stored {
		check = fmt.Sprintf("MISMATCH: this run stored %d", r.stored)
	}
	fmt.Fprintf(w, "ClickHouse: %d rows in %s, queried back (%s); %d distinct event ids\n", r.rows, names.Table, check, r.ids)
	n := float64(max(1, r.consumed))
	if f.rate > 0 {
		fmt.Fprintf(w, "CPU per event: pipeline process %.1f µs (the generator is a process of its own); machine, every process (generator, broker, ClickHouse, others) %.1f µs\n",
			r.pipeCPU.Seconds()*1e6/n, r.machCPU.Seconds()*1e6/n)
	} else {
		fmt.Fprintf(w, "CPU per event: pipeline process %.1f µs; whole process (generator + pipeline) %.1f µs; machine, every process (broker, ClickHouse, others) %.1f µs\n",
			r.pipeCPU.Seconds()*1e6/n, r.procCPU.Seconds()*1e6/n, r.machCPU.Seconds()*1e6/n)
	}
	fmt.Fprintln(w, "a published figure for this pipeline with the brokers on other machines: 180k events/s sustained (220k peak), consume → ClickHouse p50 40 ms, p99 120 ms, on two vCPUs; here broker, ClickHouse, generator and pipeline share this machine's CPUs")
	fmt.Fprintf(w, "source: %+v\nsink: %+v\nwriter: %+v\n", r.src, r.sink, r.writer)
	if r.commitErr != nil {
		fmt.Fprintf(w, "final offset commit failed (those records are read again): %v\n", r.commitErr)
	}
	fmt.Fprintln(w, "where the pipeline's time goes (per stage, summed over its goroutines):")
	for _, s := range r.snap.Stages {
		fmt.Fprintf(w, "  %-18s %2d goroutines  in %8d  out %8d  failed %6d  busy %7.2fs  waiting %7.2fs\n",
			s.Name, s.Workers, s.In, s.Out, s.Failed, s.Busy.Seconds(), s.Blocked.Seconds())
	}
}

// ktally is what the commits measured.
type ktally struct {
	mu      sync.Mutex
	lat     market.Latencies
	window  market.Latencies
	reasons map[string]int64

	// Sustained mode: produced (the event's timestamp) → committed, per
	// second, and both latencies over the generator's window (steady).
	prodWindow             market.Latencies
	steady                 bool
	steadyCons, steadyProd market.Latencies
}

// genTimes are the event times the generators give by default (gen's
// default --seed): an event's produce time is its event time plus its
// lag.
var genTimes = market.DefaultEventTimes()

// onStored measures, once a batch is committed, how long each row took
// from the source (and from its produce time) to its commit.
func (t *ktally) onStored(rows []onkafka.Row, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range rows {
		r := &rows[i]
		tk := r.Tick()
		if tk.ID >= flushFirst {
			continue // the bars' flush: an hour ahead, in no figure
		}
		cons, prod := at.Sub(r.Received()), at.Sub(time.Unix(0, tk.TS+int64(genTimes.Lag(tk.ID))))
		t.lat.Add(cons)
		t.window.Add(cons)
		t.prodWindow.Add(prod)
		if t.steady {
			t.steadyCons.Add(cons)
			t.steadyProd.Add(prod)
		}
	}
}

// results returns the latencies of the whole run and a copy of the dead
// letters by reason.
func (t *ktally) results() (market.Latencies, map[string]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lat, maps.Clone(t.reasons)
}

func (t *ktally) reason(r string) {
	t.mu.Lock()
	t.reasons[r]++
	t.mu.Unlock()
}

// runKafkaMarket runs the market-event pipeline over the input topic
// until watch says it is complete (by default: every generated event is
// settled), or until drain.
func runKafkaMarket(ctx, drain context.Context, db *sql.DB, names onkafka.Names, f kafkaFlags, stdout io.Writer, res *kafkaResult, watch watcher) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tally := &ktally{reasons: map[string]int64{}}
	cfg := onkafka.KafkaConfig{Brokers: f.kafka, Names: names, Decoders: f.decoders,
		Lookup: f.lookup, MaxInFlight: f.inflight, OnStored: tally.onStored, OnDead: tally.reason}
	if res.bars != nil {
		cfg.Bars = res.bars.hooks
	}
	k, err := onkafka.StartKafka(ctx, db, cfg)
	if err != nil {
		return err
	}
	p := k.Pipeline
	p.DrainOn(drain)
	complete, finish := context.WithCancel(ctx)
	defer finish()
	p.DrainOn(complete)

	target, received := res.generated, res.generated+res.flushed
	m := startMeasure()
	mach := machineCPU()
	start := time.Now()
	var doneAt time.Time
	if watch == nil {
		watch = func(k *onkafka.Kafka, tally *ktally, start time.Time, done func(time.Time)) func() {
			return watchKafka(k, tally, f, stdout, target, received, start, done)
		}
	}
	stopWatch := watch(k, tally, start, func(at time.Time) {
		doneAt = at
		finish()
	})
	werr := p.Wait()
	stopWatch()
	res.wall = time.Since(start)
	if !doneAt.IsZero() {
		res.wall = doneAt.Sub(start) // not counting the drain's end
	}
	fig := m.stop()
	res.pipeCPU = fig.CPU()
	res.procCPU = res.pipeCPU + res.genCPU
	res.machCPU = machineCPU() - mach
	res.commitErr = k.Close()
	if werr != nil {
		return werr
	}
	if drain.Err() != nil {
		res.drained = context.Cause(drain)
	}
	res.src, res.sink, res.writer = k.Source.Stats(), k.Sink.Stats(), k.Writer.Stats()
	res.snap = p.Stats()
	res.consumed = res.src.Acked
	res.stored, res.dead = k.Stored(), k.Dead()
	res.lat, res.reasons = tally.results()
	return queryBack(db, names.Table, res)
}

// queryBack counts the rows of table and their distinct ids into res.
func queryBack(db *sql.DB, table string, res *kafkaResult) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	if res.rows, err = clickhousex.Count(ctx, db, table); err != nil {
		return err
	}
	if err := db.QueryRowContext(ctx, "SELECT uniqExact(id) FROM "+table).Scan(&res.ids); err != nil {
		return fmt.Errorf("counting the distinct ids of %s: %w", table, err)
	}
	return nil
}
