package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/clickhousex"
	"github.com/sluicehq/sluice/connect/kafkax"
)

// The Kafka + ClickHouse demo: the market-event pipeline on real brokers. A generator fills
// the input topic, keyed by symbol; the pipeline reads it as a consumer
// group, decodes and validates (dead letters to a topic of their own),
// normalises, batches, enriches, inserts the batch into ClickHouse, then
// produces the enriched events to a downstream topic. A record is
// committed once its row is committed in ClickHouse and its enriched
// record is acknowledged by the broker: the row carries the record's
// receipt, and sluice.Broadcast holds it once per copy, so the core
// settles it after both sinks stored theirs.

// kafkaNames are the topics, group and table of a demo run named name.
type kafkaNames struct {
	in, out, dead, group, table string
}

func namesFor(name string) kafkaNames {
	return kafkaNames{in: name + "-market", out: name + "-enriched", dead: name + "-dead",
		group: name, table: strings.ReplaceAll(name, "-", "_") + "_events"}
}

const kafkaTableDDL = `(id UInt64, symbol String, price4 Int64, size Int64, ts Int64, notional Int64,
	name String, sector String, currency String, lots Int64) ENGINE = MergeTree ORDER BY id`

// demoEpoch is what the rows' receive times count from (monotonic).
var demoEpoch = time.Now()

// krow is an event on its way from the enrich stage to ClickHouse and the
// downstream topic; it carries the receipt of its record. It is kept small
// (its reference data behind a pointer): the stages from Batch to the
// fan-out's two copies each copy it.
type krow struct {
	msg  kafkax.Msg
	at   time.Duration // since demoEpoch, when the decode stage received it from the source
	tick tick
	ref  *refData // nil: its symbol has no reference data (dead-lettered)
}

// enrichRefs looks up the reference data of the symbols of batch b and
// points each row that has some at it.
func enrichRefs(refs *refService, b []krow) {
	syms := make(map[string]refData, len(symbols))
	for i := range b {
		syms[b[i].tick.symbol] = refData{}
	}
	refs.Lookup(syms)
	found := make([]refData, 0, len(syms))
	bySym := make(map[string]*refData, len(syms))
	for s, d := range syms {
		found = append(found, d)
		bySym[s] = &found[len(found)-1]
	}
	for i := range b {
		b[i].ref = bySym[b[i].tick.symbol] // nil when unknown
	}
}

// Origin returns the receipt of the record it came from.
func (r *krow) Origin() sluice.Receipt { return r.msg.Receipt }

// krowColumns are the demo table's columns (kafkaTableDDL) as the store
// writes them: each value appended to the insert's block typed, with no
// []any and no boxed value per row.
var krowColumns = []clickhousex.Column[krow]{
	clickhousex.UInt64Column("id", func(r *krow) uint64 { return r.tick.id }),
	clickhousex.StringColumn("symbol", func(r *krow) string { return r.tick.symbol }),
	clickhousex.Int64Column("price4", func(r *krow) int64 { return r.tick.price4 }),
	clickhousex.Int64Column("size", func(r *krow) int64 { return r.tick.size }),
	clickhousex.Int64Column("ts", func(r *krow) int64 { return r.tick.ts }),
	clickhousex.Int64Column("notional", func(r *krow) int64 { return r.tick.notional }),
	clickhousex.StringColumn("name", func(r *krow) string { return r.ref.name }),
	clickhousex.StringColumn("sector", func(r *krow) string { return r.ref.sector }),
	clickhousex.StringColumn("currency", func(r *krow) string { return r.ref.currency }),
	clickhousex.Int64Column("lots", func(r *krow) int64 { return (r.tick.size + r.ref.lot - 1) / r.ref.lot }),
}

var errUnknownSymbol = errors.New("unknown symbol")

// The encode stage's slabs: encodeSlab bytes each, a new one once fewer
// than encodeRoom bytes (more than an encoded line) are left.
const (
	encodeSlab = 64 << 10
	encodeRoom = 512
)

// The source's fetches: see runKafkaMarket.
const (
	demoFetchBytes = 256 << 10
	demoFetchWait  = 25 * time.Millisecond
)

// storeInserts is how many ClickHouse inserts the store stage runs at
// once; each takes every row waiting, up to clickhousex.DefaultGather.
const storeInserts = clickhousex.DefaultSinkWorkers

// demoKafka runs `sluice demo --kafka … --clickhouse …`.
func demoKafka(ctx context.Context, in *interrupts, f demoFlags, stdout, stderr io.Writer) error {
	drain := in.Draining()
	names := namesFor(f.name)
	fmt.Fprintf(stdout, "conditions: %s\n", conditions())
	fmt.Fprintf(stdout, "Kafka at %s, ClickHouse at %s; topics %s → %s (dead letters %s), group %s, table %s\n",
		f.kafka, f.clickhouse, names.in, names.out, names.dead, names.group, names.table)
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

	var res kafkaResult
	if err := prepareKafka(ctx, adm, db, names, f); err != nil {
		return err
	}
	var sustained *sustainedRun
	if f.rate > 0 {
		sustained = &sustainedRun{f: f, names: names, adm: adm, in: in, stdout: stdout, stderr: stderr}
		fmt.Fprintf(stdout, "sustained: the pipeline starts, then `sluice gen` (a process of its own) produces %d events/s for %s to %s\n",
			f.rate, f.duration, names.in)
	} else if !f.resume && !f.serve {
		if ran, err := generateBacklog(ctx, drain, names, f, stdout, &res); !ran {
			return err
		}
	}
	stopProfile, err := profile(f)
	if err != nil {
		return err
	}
	var watch watcher
	if sustained != nil {
		watch = sustained.watch
	}
	if f.serve {
		fmt.Fprintf(stdout, "serving: a member of group %s, consuming %s until SIGTERM or SIGINT\n", names.group, names.in)
		watch = func(src *kafkax.Source, tally *ktally, stored, dead *atomic.Int64, start time.Time, done func(time.Time)) func() {
			return watchKafka(src, tally, f, stdout, stored, dead, math.MaxInt64, start, done) // never done
		}
	}
	err = runKafkaMarket(ctx, drain, db, names, f, stdout, f.live, &res, watch)
	stopProfile()
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
	if f.compare && ceiling > 0 {
		fmt.Fprintf(stdout, "demo / ceiling: %s / %s events/s = %.0f %% (target ≥ 90 %%)\n", si(res.perSec()), si(ceiling), 100*res.perSec()/ceiling)
	}
	if !f.resume && !f.serve && res.drained == nil && res.rows != res.stored {
		return fmt.Errorf("ClickHouse holds %d rows in %s, but the pipeline stored %d", res.rows, names.table, res.stored)
	}
	return nil
}

// prepareKafka readies the topics and the table: a service (--serve)
// creates those missing, --resume keeps them as they are, and any other
// run deletes and re-creates them empty.
func prepareKafka(ctx context.Context, adm *kadm.Client, db *sql.DB, names kafkaNames, f demoFlags) error {
	if f.resume || f.serve {
		if f.serve {
			if err := ensureTopics(ctx, adm, f.partitions, names.in, names.out, names.dead); err != nil {
				return err
			}
		}
		return createTable(ctx, db, names.table, false)
	}
	if err := resetKafka(ctx, adm, f.partitions, names.group, names.in, names.out, names.dead); err != nil {
		return err
	}
	return createTable(ctx, db, names.table, true)
}

// generateBacklog fills the input topic before the pipeline starts (the
// backlog mode). ran is false when the pipeline must not run: err, or nil
// after drain (a signal) stopped the generator.
func generateBacklog(ctx, drain context.Context, names kafkaNames, f demoFlags, stdout io.Writer, res *kafkaResult) (ran bool, err error) {
	gctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(drain, stop)()
	start, m := time.Now(), startMeasure()
	n, err := generateKafka(gctx, f.kafka, names.in, f)
	res.generated, res.genWall, res.genCPU = n, time.Since(start), m.stop().CPU()
	if drain.Err() != nil {
		fmt.Fprintf(stdout, "interrupted (%v) while generating: %d events in %s; the pipeline did not run\n", context.Cause(drain), n, names.in)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("generator: %w", err)
	}
	fmt.Fprintf(stdout, "generator: %d events produced to %s in %.2fs = %s events/s (before the pipeline starts)\n",
		n, names.in, res.genWall.Seconds(), si(float64(n)/res.genWall.Seconds()))
	return true, nil
}

// resetKafka deletes the group and the topics, and creates the topics
// again, empty.
func resetKafka(ctx context.Context, adm *kadm.Client, partitions int, group string, topics ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A fresh broker has no group coordinator until its offsets topic
	// exists: retry while it says so.
	for {
		r, err := adm.DeleteGroups(ctx, group)
		if err == nil {
			err = r[group].Err
		}
		if err == nil || errors.Is(err, kerr.GroupIDNotFound) {
			break
		}
		if errors.Is(err, kerr.NonEmptyGroup) {
			return fmt.Errorf("deleting group %s (is another demo running with --name %s?): %w", group, group, err)
		}
		if !sleepCtx(ctx, 200*time.Millisecond) {
			return fmt.Errorf("deleting group %s: %w", group, err)
		}
	}
	if _, err := adm.DeleteTopics(ctx, topics...); err != nil {
		return fmt.Errorf("deleting topics: %w", err)
	}
	left := topics
	for len(left) > 0 {
		r, err := adm.CreateTopics(ctx, int32(partitions), 1, nil, left...)
		if err != nil {
			return fmt.Errorf("creating topics: %w", err)
		}
		left = nil
		for _, t := range r.Sorted() {
			switch {
			case t.Err == nil:
			case errors.Is(t.Err, kerr.TopicAlreadyExists): // still being deleted
				left = append(left, t.Topic)
			default:
				return fmt.Errorf("creating topic %s: %w", t.Topic, t.Err)
			}
		}
		if len(left) > 0 && !sleepCtx(ctx, 100*time.Millisecond) {
			return fmt.Errorf("creating topics %v: %w", left, ctx.Err())
		}
	}
	return nil
}

// ensureTopics creates those of topics that do not exist yet, with
// partitions partitions; it deletes nothing.
func ensureTopics(ctx context.Context, adm *kadm.Client, partitions int, topics ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := adm.CreateTopics(ctx, int32(partitions), 1, nil, topics...)
	if err != nil {
		return fmt.Errorf("creating topics: %w", err)
	}
	for _, t := range r.Sorted() {
		if t.Err != nil && !errors.Is(t.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("creating topic %s: %w", t.Topic, t.Err)
		}
	}
	return nil
}

// createTable creates the demo's table, dropping it first if fresh.
func createTable(ctx context.Context, db *sql.DB, table string, fresh bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if fresh {
		if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
			return fmt.Errorf("dropping table %s: %w", table, err)
		}
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table+" "+kafkaTableDDL); err != nil {
		return fmt.Errorf("creating table %s: %w", table, err)
	}
	return nil
}

// generateKafka produces f.events market events to topic, keyed by symbol,
// and returns how many the broker acknowledged.
func generateKafka(ctx context.Context, brokers, topic string, f demoFlags) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(2*time.Millisecond), kgo.MaxBufferedRecords(20000))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var stored atomic.Int64
	var mu sync.Mutex
	var firstErr error
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
			return
		}
		stored.Add(1)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	var buf []byte
	ts := time.Now().UnixNano()
	for i := 0; i < f.events; i++ {
		if i%1000 == 0 {
			if ctx.Err() != nil {
				break
			}
			ts = time.Now().UnixNano()
		}
		buf = genEvent(buf[:0], rng, i, ts, f.malformed)
		v := append([]byte(nil), buf...)
		cl.Produce(ctx, &kgo.Record{Key: eventKey(v), Value: v}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return stored.Load(), err
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return stored.Load(), fmt.Errorf("%d of %d events not stored: %w", int64(f.events)-stored.Load(), f.events, firstErr)
	}
	return stored.Load(), nil
}

// eventKey is the upper-cased symbol of an event line, or nil for a line
// without one.
func eventKey(line []byte) []byte {
	_, rest, ok := bytes.Cut(line, []byte{','})
	if !ok {
		return nil
	}
	sym, _, _ := bytes.Cut(rest, []byte{','})
	return bytes.ToUpper(sym)
}

// kafkaResult is what one Kafka demo run measured.
type kafkaResult struct {
	generated int64
	genWall   time.Duration
	consumed  int64 // settled records: stored, or dead-lettered
	stored    int64 // rows this run committed in ClickHouse
	dead      int64
	reasons   map[string]int64
	rows      int64 // count() of the table, queried back
	ids       int64 // distinct ids in the table
	wall      time.Duration
	lat       latencies
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

func (r kafkaResult) print(w io.Writer, f demoFlags) {
	names := namesFor(f.name)
	if r.drained != nil {
		fmt.Fprintf(w, "interrupted (%v): drained: the source took no new records; of the %d it had received, %d were stored or dead-lettered and committed, %d unsettled (read again by the next run)\n",
			r.drained, r.src.Received, r.src.Acked, r.src.InFlight)
	}
	if f.rate > 0 {
		fmt.Fprint(w, "whole run, warm-up, window and drain (not a sustained figure; see the sustained window below): ")
	}
	fmt.Fprintf(w, "demo: %d events in %.2fs = %s events/s; %d stored in ClickHouse and produced to %s, %d dead-lettered to %s %v\n",
		r.consumed, r.wall.Seconds(), si(r.perSec()), r.stored, names.out, r.dead, names.dead, r.reasons)
	fmt.Fprintf(w, "latency, consumed → committed in ClickHouse: p50 %s  p99 %s  max %s\n", ms(r.lat.q(0.5)), ms(r.lat.q(0.99)), ms(r.lat.max))
	check := "equal to the rows this run stored"
	if f.resume || f.serve {
		check = "including earlier runs' and other members' rows"
	} else if r.rows != r.stored {
		check = fmt.Sprintf("MISMATCH: this run stored %d", r.stored)
	}
	fmt.Fprintf(w, "ClickHouse: %d rows in %s, queried back (%s); %d distinct event ids\n", r.rows, names.table, check, r.ids)
	n := float64(max(1, r.consumed))
	if f.rate > 0 {
		fmt.Fprintf(w, "CPU per event: pipeline process %.1f µs (the generator is a process of its own); machine, every process (generator, broker, ClickHouse, others) %.1f µs\n",
			r.pipeCPU.Seconds()*1e6/n, r.machCPU.Seconds()*1e6/n)
	} else {
		fmt.Fprintf(w, "CPU per event: pipeline process %.1f µs; whole process (generator + pipeline) %.1f µs; machine, every process (broker, ClickHouse, others) %.1f µs\n",
			r.pipeCPU.Seconds()*1e6/n, r.procCPU.Seconds()*1e6/n, r.machCPU.Seconds()*1e6/n)
	}
	fmt.Fprintln(w, "the market-event write-up measured 180k events/s sustained, 220k peak, consume → ClickHouse p50 40 ms, p99 120 ms on two vCPUs, with the broker and ClickHouse on other machines; here broker, ClickHouse, generator and pipeline share this machine's CPUs")
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
	lat     latencies
	window  latencies
	reasons map[string]int64

	// Sustained mode: produced (the event's timestamp) → committed, per
	// second, and both latencies over the generator's window (steady).
	prodWindow             latencies
	steady                 bool
	steadyCons, steadyProd latencies
}

// measured returns a write of w that measures, once a batch is
// committed, how long each row took from the source, and counts the rows
// in stored; the stage that calls it settles the rows after.
func (t *ktally) measured(w *clickhousex.Writer[krow], stored *atomic.Int64) func(context.Context, []krow) error {
	return func(ctx context.Context, rows []krow) error {
		if err := w.Write(ctx, rows); err != nil {
			return err
		}
		now := time.Now()
		since := now.Sub(demoEpoch)
		t.mu.Lock()
		for i := range rows {
			r := &rows[i]
			cons, prod := since-r.at, now.Sub(time.Unix(0, r.tick.ts))
			t.lat.add(cons)
			t.window.add(cons)
			t.prodWindow.add(prod)
			if t.steady {
				t.steadyCons.add(cons)
				t.steadyProd.add(prod)
			}
		}
		t.mu.Unlock()
		stored.Add(int64(len(rows)))
		return nil
	}
}

// results returns the latencies of the whole run and a copy of the dead
// letters by reason.
func (t *ktally) results() (latencies, map[string]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lat, maps.Clone(t.reasons)
}

func (t *ktally) reason(r string) {
	t.mu.Lock()
	t.reasons[r]++
	t.mu.Unlock()
}

// runKafkaMarket runs the market-event pipeline over the input topic until every
// generated event is settled (or, with --resume, until the topic is
// consumed), or until drain.
func runKafkaMarket(ctx, drain context.Context, db *sql.DB, names kafkaNames, f demoFlags, stdout io.Writer, d *liveDash, res *kafkaResult, watch watcher) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sink, err := kafkax.NewSink(ctx, f.kafka, kafkax.SinkWorkers(2))
	if err != nil {
		return err
	}
	defer sink.Close()
	// A fetch waits for demoFetchBytes of records, or demoFetchWait: at a
	// sustained rate the broker would otherwise answer each fetch with the
	// few records that arrived since the last, and the source, and every
	// stage after it, would wake and spend a round trip's CPU on each. At
	// the sustained rates measured (up to 66k/s) the wait ends it, so the
	// pipeline wakes 40 times a second, not 100 (10 ms): less CPU per
	// event, for a higher p99 consume → ClickHouse (the figures are in
	// docs/performance.md). It adds at most demoFetchWait to the
	// produced → ClickHouse latency, under the collect stage's 50 ms.
	opts := []kafkax.SourceOption{kafkax.MaxInFlight(f.inflight),
		kafkax.WithClient(kgo.FetchMinBytes(demoFetchBytes), kgo.FetchMaxWait(demoFetchWait))}
	if f.resume {
		opts = append(opts, kafkax.StopWhenCaughtUp())
	}
	if f.serve {
		// A member that dies gives its partitions up to the others
		// after this long without a heartbeat (the broker's minimum).
		opts = append(opts, kafkax.WithClient(kgo.SessionTimeout(6*time.Second)))
	}
	src, err := kafkax.NewSource(ctx, f.kafka, names.group, []string{names.in}, opts...)
	if err != nil {
		return err
	}
	defer src.Close()

	var stored, dead atomic.Int64
	tally := &ktally{reasons: map[string]int64{}}
	w := clickhousex.NewColumnWriter(db, names.table, krowColumns, clickhousex.SinkWorkers(storeInserts))
	refs := newRefService(f.lookup)
	p := kafkaPipeline(ctx, src, sink, tally.measured(w, &stored), refs, names, f.decoders, tally, &dead)
	p.DrainOn(drain)
	complete, finish := context.WithCancel(ctx)
	defer finish()
	p.DrainOn(complete)
	if d != nil {
		d.show(p)
	}

	target := res.generated
	m := startMeasure()
	mach := machineCPU()
	start := time.Now()
	var doneAt time.Time
	if watch == nil {
		watch = func(src *kafkax.Source, tally *ktally, stored, dead *atomic.Int64, start time.Time, done func(time.Time)) func() {
			return watchKafka(src, tally, f, stdout, stored, dead, target, start, done)
		}
	}
	stopWatch := watch(src, tally, &stored, &dead, start, func(at time.Time) {
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
	if werr != nil {
		return werr
	}
	if drain.Err() != nil {
		res.drained = context.Cause(drain)
	}
	res.commitErr = src.Close()
	res.src, res.sink, res.writer = src.Stats(), sink.Stats(), w.Stats()
	res.snap = p.Stats()
	res.consumed = res.src.Acked
	res.stored, res.dead = stored.Load(), dead.Load()
	res.lat, res.reasons = tally.results()
	return queryBack(db, names.table, res)
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

// watcher starts a goroutine that watches a run of the pipeline and calls
// done once it is complete; the returned function stops it and waits for
// it. watchKafka is the backlog mode's, (*sustainedRun).watch the
// sustained mode's.
type watcher func(src *kafkax.Source, tally *ktally, stored, dead *atomic.Int64, start time.Time, done func(time.Time)) (stop func())

// watchKafka starts a goroutine that prints progress every second and
// calls done once every generated event (target) is settled, unless the
// run resumes; the returned function stops it and waits for it.
func watchKafka(src *kafkax.Source, tally *ktally, f demoFlags, stdout io.Writer, stored, dead *atomic.Int64,
	target int64, start time.Time, done func(time.Time)) (stop func()) {
	stopped, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		last, lastAt, nextLine, ended := int64(0), start, start.Add(time.Second), false
		for {
			select {
			case <-stopped:
				return
			case now := <-tick.C:
				settled := src.Stats().Acked
				if !f.resume && !ended && settled >= target {
					ended = true
					done(now)
				}
				if !f.quiet && now.After(nextLine) {
					tally.mu.Lock()
					win := tally.window
					tally.window = latencies{}
					tally.mu.Unlock()
					fmt.Fprintf(stdout, "%6.1fs  events/s %7s  latency p50 %-7s p99 %-7s  in-flight %6d  dead-lettered %6d  stored %d\n",
						now.Sub(start).Seconds(), si(float64(settled-last)/now.Sub(lastAt).Seconds()),
						ms(win.q(0.5)), ms(win.q(0.99)), src.Stats().InFlight, dead.Load(), stored.Load())
					last, lastAt, nextLine = settled, now, nextLine.Add(time.Second)
				}
			}
		}
	}()
	return func() {
		close(stopped)
		<-exited
	}
}

// kafkaPipeline builds the market-event pipeline on Kafka and ClickHouse:
//
//	consume → decode+validate+normalise (n workers) → collect (500, 50 ms)
//	        → enrich (2 workers, one reference lookup per batch) → check (unknown symbols to the dead letters)
//	        → fan-out, two copies of each row:
//	             store (2 inserts at once, each of every row waiting, up to 16384)
//	             encode → publish (batch produce to the downstream topic)
//	decode+validate's and check's dead letters → dead-letter → publish-dead
//
// No stage settles anything: every item carries its record's receipt, and
// the core settles it once the item is stored (both copies, and a dead
// letter once produced).
func kafkaPipeline(ctx context.Context, src *kafkax.Source, sink *kafkax.Sink, store func(context.Context, []krow) error, refs *refService,
	names kafkaNames, decoders int, tally *ktally, dead *atomic.Int64) *sluice.Pipeline {
	p := sluice.New(ctx, sluice.Named("market"))
	msgs := kafkax.Read(p, "consume", src)
	var bad sluice.Stream[sluice.Failed[kafkax.Msg]]
	norm := sluice.Map(p, "decode", msgs, decoders, func(_ context.Context, m kafkax.Msg) (krow, error) {
		at := time.Since(demoEpoch)
		ev, err := decode(m.Value())
		if err != nil {
			return krow{}, err
		}
		return krow{msg: m, at: at, tick: normalise(ev)}, nil
	}, sluice.DeadLetter(&bad))
	batches := sluice.Batch(p, "collect", norm, 500, 50*time.Millisecond)
	enriched := sluice.Map(p, "enrich", batches, 2, func(_ context.Context, b []krow) ([]krow, error) {
		enrichRefs(refs, b)
		return b, nil
	})
	var unknown sluice.Stream[sluice.Failed[krow]]
	good := sluice.Map(p, "check", sluice.Unbatch(p, "rows", enriched), 1, func(_ context.Context, r krow) (krow, error) {
		if r.ref == nil {
			return r, errUnknownSymbol
		}
		return r, nil
	}, sluice.DeadLetter(&unknown))
	copies := sluice.Broadcast(p, "fan-out", good, 2, sluice.Chunk(500))
	sluice.ForEachChunk(p, "store", copies[0], storeInserts, store,
		sluice.Gather(clickhousex.DefaultGather), sluice.Retry(3, 100*time.Millisecond, time.Second))
	// The encode stage (one goroutine) carves the records' values out of
	// a slab instead of allocating each; the key is the value's symbol
	// field. Neither is modified once handed on.
	var slab []byte
	outs := sluice.Map(p, "encode", copies[1], 1, func(_ context.Context, r krow) (kafkax.Out, error) {
		if cap(slab)-len(slab) < encodeRoom {
			slab = make([]byte, 0, encodeSlab)
		}
		start := len(slab)
		slab = encodeEnriched(slab, r.tick, *r.ref)
		v := slab[start:len(slab):len(slab)]
		k := bytes.IndexByte(v, ',') + 1 // after the id
		key := v[k : k+len(r.tick.symbol) : k+len(r.tick.symbol)]
		return kafkax.Out{Topic: names.out, Key: key, Value: v, From: r.msg.Receipt}, nil
	}, sluice.Chunk(500))
	kafkax.Produce(p, "publish", outs, sink)
	deadLetter := func(m kafkax.Msg, err error) kafkax.Out {
		tally.reason(err.Error())
		dead.Add(1)
		return kafkax.DeadLetterOut(m, names.dead, err)
	}
	badOuts := sluice.Map(p, "dead-letter", bad, 1, func(_ context.Context, f sluice.Failed[kafkax.Msg]) (kafkax.Out, error) {
		return deadLetter(f.Item, f.Err), nil
	})
	unknownOuts := sluice.Map(p, "unknown", unknown, 1, func(_ context.Context, f sluice.Failed[krow]) (kafkax.Out, error) {
		return deadLetter(f.Item.msg, f.Err), nil
	})
	kafkax.Produce(p, "publish-dead", sluice.Merge(p, "dead", []sluice.Stream[kafkax.Out]{badOuts, unknownOuts}), sink)
	return p
}
