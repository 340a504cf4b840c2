package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
)

// The bars tests run `sluice serve` on the real broker and ClickHouse,
// produce market events with their own event times (up to 100 ms of
// disorder, a few late by DefaultLateBy) while it runs, and compare the
// bars table, read with FINAL, with the bars a plain loop computes over
// the events read back from the input topic: 0 missing, 0 different, 0
// extra.

// barsRun is one bars test's topics, table and clients.
type barsRun struct {
	s     services
	name  string
	names onkafka.Names
	bars  onkafka.BarNames
	adm   *kadm.Client
}

func newBarsRun(t *testing.T, name string, partitions int, extra ...string) *barsRun {
	t.Helper()
	s := needServices(t)
	r := &barsRun{s: s, name: name, names: onkafka.NamesFor(name), bars: onkafka.BarNamesFor(name)}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.kafka))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	r.adm = kadm.NewClient(cl)
	topics := append([]string{r.names.In, r.names.Out, r.names.Dead, r.bars.Topic, r.bars.Late}, extra...)
	if err := onkafka.ResetTopics(ctxTest(t, 30*time.Second), r.adm, partitions, r.names.Group, topics...); err != nil {
		t.Fatal(err)
	}
	db := openCH(t, s.clickhouse)
	if err := onkafka.CreateTable(ctxTest(t, 30*time.Second), db, r.names.Table, true); err != nil {
		t.Fatal(err)
	}
	if err := onkafka.CreateBarsTable(ctxTest(t, 30*time.Second), db, r.bars.Table, true); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *barsRun) serve(t *testing.T, args ...string) *demoProcess {
	return startCLI(t, append([]string{"serve", "--kafka", r.s.kafka, "--clickhouse", r.s.clickhouse, "--name", r.name}, args...)...)
}

// produce produces batches of 500 events, 250 ms apart, numbered from
// first, each with its own event time (DefaultEventTimes, one in 200
// late, none in the first 8 batches, about 3 s: until every partition a
// window stage's source lists has spoken, or been idle for 2 s, the stage
// has no watermark and takes a late event as on time), keyed by symbol
// unless byID; during(i) runs before batch i.
func (r *barsRun) produce(t *testing.T, first, batches int, byID bool, during func(i int)) int64 {
	var n int64
	for i := range batches {
		if during != nil {
			during(i)
		}
		times := market.DefaultEventTimes()
		times.Late = 0.005
		if i < 8 {
			times.Late = 0
		}
		pr := onkafka.Producing{Brokers: r.s.kafka, Topic: r.names.In, First: first + i*500, N: 500, Malformed: 0.01, Times: times, KeyByID: byID}
		k, err := onkafka.ProduceEvents(context.Background(), pr)
		n += k
		if err != nil {
			t.Errorf("producing: %v", err)
			return n
		}
		time.Sleep(250 * time.Millisecond)
	}
	return n
}

// flush waits until the events table holds every well-formed event of a
// known symbol — every partition read to its end by its owner — then
// produces, for every symbol, an event an hour of event time after the
// others, so that every partition's watermark passes every window of the
// run; it returns the start of the flush events' window, before which
// every window must be stored. (Flushed earlier, a partition still being
// read, say by a member that took it over, would find the watermark of
// the flushed ones an hour ahead and its events late.)
func (r *barsRun) flush(t *testing.T, first int, byID bool) int64 {
	t.Helper()
	good, _ := expected(t, r.s.kafka, r.names.In)
	db := openCH(t, r.s.clickhouse)
	for deadline := time.Now().Add(120 * time.Second); ; {
		var ids uint64
		if err := db.QueryRowContext(ctxTest(t, 10*time.Second), "SELECT uniqExact(id) FROM "+r.names.Table).Scan(&ids); err != nil {
			t.Fatal(err)
		}
		if ids >= uint64(len(good)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events table: %d of %d events after 120 s", ids, len(good))
		}
		time.Sleep(200 * time.Millisecond)
	}
	cut, _, err := onkafka.FlushBars(context.Background(), r.s.kafka, r.names.In, first, byID)
	if err != nil {
		t.Fatalf("producing the flush events: %v", err)
	}
	return cut
}

// want is onkafka.ExpectedBars over the input topic: each event in the
// partition of the topic the windows read (partitionOf), before cut.
func (r *barsRun) want(t *testing.T, cut int64, partitionOf func(*kgo.Record, market.Tick) int) (map[market.BarKey]market.Bar, []uint64) {
	t.Helper()
	return onkafka.ExpectedBars(readTopic(t, r.s.kafka, r.names.In), partitionOf, cut)
}

// awaitBars waits until the bars table holds every key of want, or 90 s
// have passed, and returns what it holds (FINAL) before cut, and its rows
// before merging.
func (r *barsRun) awaitBars(t *testing.T, want map[market.BarKey]market.Bar, cut int64) (map[market.BarKey]market.Bar, int64) {
	t.Helper()
	db := openCH(t, r.s.clickhouse)
	deadline := time.Now().Add(90 * time.Second)
	for {
		got, raw, err := onkafka.ReadBars(ctxTest(t, 20*time.Second), db, r.bars.Table)
		if err != nil {
			t.Fatal(err)
		}
		for k := range got {
			if k.Start >= cut {
				delete(got, k)
			}
		}
		missing, different, _ := market.BarDiff(got, want)
		if len(missing)+len(different) == 0 || time.Now().After(deadline) {
			return got, raw
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// checkBars compares got with want, reports the figures, and checks the
// bars topic: its last record of each window is the table's bar.
func (r *barsRun) checkBars(t *testing.T, got, want map[market.BarKey]market.Bar, raw int64, late []uint64) {
	t.Helper()
	missing, different, extra := market.BarDiff(got, want)
	t.Logf("bars: %d expected (%d late events in none), %d in the table with FINAL (%d rows before merging): %d missing, %d different, %d extra",
		len(want), len(late), len(got), raw, len(missing), len(different), len(extra))
	// The late topic holds the late events (some more than once, after a
	// replay), and no other.
	var gotLate []uint64
	for _, kr := range readTopic(t, r.s.kafka, r.bars.Late) {
		ev, err := market.Decode(kr.Value)
		if err != nil {
			t.Fatalf("late topic: %q: %v", kr.Value, err)
		}
		gotLate = append(gotLate, ev.ID)
	}
	slices.Sort(gotLate)
	gotLate = slices.Compact(gotLate)
	if !slices.Equal(gotLate, late) {
		t.Errorf("late topic: %d events %v…, want the %d the plain loop found late %v…", len(gotLate), gotLate[:min(10, len(gotLate))], len(late), late[:min(10, len(late))])
	}
	for _, ks := range []struct {
		what string
		keys []market.BarKey
	}{{"missing", missing}, {"different", different}, {"extra", extra}} {
		for i, k := range ks.keys {
			if i == 5 {
				t.Errorf("… %d more %s", len(ks.keys)-5, ks.what)
				break
			}
			t.Errorf("%s: %s at %s: got %+v, want %+v", ks.what, k.Symbol, time.Unix(0, k.Start).UTC().Format(time.TimeOnly), got[k], want[k])
		}
	}
	if len(late) == 0 {
		t.Errorf("no late events: the run did not exercise lateness")
	}
	// The topic: for each window, its record with the most trades (the
	// last revision) is the table's bar.
	best := map[market.BarKey]market.Bar{}
	for _, kr := range readTopic(t, r.s.kafka, r.bars.Topic) {
		b, err := market.ParseBar(kr.Value)
		if err != nil {
			t.Fatalf("bars topic: %q: %v", kr.Value, err)
		}
		if string(kr.Key) != b.Symbol {
			t.Fatalf("bars topic: a record of %s keyed %q", b.Symbol, kr.Key)
		}
		if b.Trades >= best[b.Key()].Trades {
			best[b.Key()] = b
		}
	}
	for k, w := range want {
		if b, ok := best[k]; !ok || !b.Same(w) {
			t.Errorf("bars topic: %s at %d: got %+v, want %+v", k.Symbol, k.Start, b, w)
			break
		}
	}
}

func (r *barsRun) stop(t *testing.T, members ...*demoProcess) {
	t.Helper()
	for _, d := range members {
		if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range members {
		if code := d.wait(t, 60*time.Second); code != 0 {
			t.Errorf("a member exited %d after SIGTERM, want 0:\n%s", code, d.out())
		}
	}
}

// One `sluice serve`, no faults: the bars table equals the plain loop's
// bars.
func TestKafkaServiceBarsEqualAPlainLoopsBars(t *testing.T) {
	const partitions = 4
	r := newBarsRun(t, "bars1", partitions)
	d := r.serve(t, "--partitions", fmt.Sprint(partitions))
	awaitGroup(t, r.adm, r.names.Group, r.names.In, 1, partitions, 60*time.Second)
	n := r.produce(t, 0, 24, false, nil)
	cut := r.flush(t, int(n), false)
	want, late := r.want(t, cut, func(kr *kgo.Record, _ market.Tick) int { return int(kr.Partition) })
	got, raw := r.awaitBars(t, want, cut)
	r.stop(t, d)
	r.checkBars(t, got, want, raw, late)
}

// restartBroker stops the services' Kafka broker and starts it again on
// the same files (same port, same topics).
func restartBroker(t *testing.T) {
	t.Helper()
	script, _ := filepath.Abs("../../scripts/kafka")
	dir := filepath.Join(servicesDir, "kafka")
	for _, arg := range []string{"stop", "start"} {
		if out, err := exec.Command(script, arg, dir).CombinedOutput(); err != nil {
			t.Fatalf("scripts/kafka %s: %v\n%s", arg, err, out)
		}
	}
}

// Three `sluice serve` processes share the partitions while events are
// produced; one is SIGKILLed mid-run and started again, then the broker
// is restarted: the bars table still equals the plain loop's bars. What
// the killed member held unsettled is delivered again and its windows
// computed again; a window stored more than once is one row with FINAL
// (the table keeps the bar of the most trades).
func TestKafkaServiceBarsSurviveASIGKILLAndABrokerRestart(t *testing.T) {
	const partitions = 6
	r := newBarsRun(t, "bars3", partitions)
	args := []string{"--partitions", fmt.Sprint(partitions)}
	members := []*demoProcess{r.serve(t, args...), r.serve(t, args...), r.serve(t, args...)}
	awaitGroup(t, r.adm, r.names.Group, r.names.In, 3, partitions, 60*time.Second)
	n := r.produce(t, 0, 40, false, func(i int) {
		switch i {
		case 8: // mid-run: the first member has stored events
			members[0].await(t, storedLine)
			if err := members[0].cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			members[0].wait(t, 10*time.Second)
		case 12:
			members[0] = r.serve(t, args...)
		case 24:
			restartBroker(t)
		}
	})
	cut := r.flush(t, int(n), false)
	want, late := r.want(t, cut, func(kr *kgo.Record, _ market.Tick) int { return int(kr.Partition) })
	got, raw := r.awaitBars(t, want, cut)
	r.stop(t, members...)
	r.checkBars(t, got, want, raw, late)
}

// The input keyed by event id, not by symbol, and two members: each
// re-keys what it reads through NAME-repartition (--repartition), so
// that a symbol's events meet in one partition of that topic, read by one
// member; the bars table equals the plain loop's bars, each event taken
// in the partition of the repartition topic it was read from.
func TestKafkaServiceRepartitionsAnInputNotKeyedBySymbol(t *testing.T) {
	const partitions = 4
	rep := "barsrep-repartition"
	r := newBarsRun(t, "barsrep", partitions, rep)
	args := []string{"--partitions", fmt.Sprint(partitions), "--repartition"}
	members := []*demoProcess{r.serve(t, args...), r.serve(t, args...)}
	// Each member is two members of the group: a source of the input and
	// one of the repartition topic.
	awaitGroup(t, r.adm, r.names.Group, r.names.In, 4, partitions, 60*time.Second)
	n := r.produce(t, 0, 24, true, nil)
	cut := r.flush(t, int(n), true)
	// Where each event went in the repartition topic, once all are there.
	decodable := 0
	for _, kr := range readTopic(t, r.s.kafka, r.names.In) {
		if ev, err := market.Decode(kr.Value); err == nil && ev.ID < uint64(n) {
			decodable++
		}
	}
	var parts map[uint64]int
	for deadline := time.Now().Add(60 * time.Second); ; {
		parts = map[uint64]int{}
		bySym := map[string]int32{}
		for _, kr := range readTopic(t, r.s.kafka, rep) {
			ev, err := market.Decode(kr.Value)
			if err != nil {
				continue
			}
			tk := market.Normalise(ev)
			if p, ok := bySym[tk.Symbol]; ok && p != kr.Partition {
				t.Fatalf("repartition topic: %s in partitions %d and %d", tk.Symbol, p, kr.Partition)
			}
			bySym[tk.Symbol] = kr.Partition
			if tk.ID < uint64(n) {
				parts[tk.ID] = int(kr.Partition)
			}
		}
		if len(parts) >= decodable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the repartition topic holds %d of the %d events", len(parts), decodable)
		}
		time.Sleep(500 * time.Millisecond)
	}
	want, late := r.want(t, cut, func(_ *kgo.Record, tk market.Tick) int {
		if p, ok := parts[tk.ID]; ok {
			return p
		}
		return -1 // a flush event, in no window compared
	})
	got, raw := r.awaitBars(t, want, cut)
	r.stop(t, members...)
	r.checkBars(t, got, want, raw, late)
}
