package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/cmd/sluice/internal/cli"
	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"github.com/sluicehq/sluice/connect/clickhousex"
	"github.com/sluicehq/sluice/connect/kafkax"
)

// The Kafka + ClickHouse demo's tests run on a real broker and server,
// started once for the package by scripts/services (on the first test that
// needs them) and stopped by TestMain. Missing Java, Maven or ClickHouse
// fails these tests; it does not skip them.

type services struct{ kafka, clickhouse string }

var (
	servicesDir   string
	startServices = sync.OnceValues(func() (services, error) {
		for _, tool := range []string{"java", "mvn", "curl"} {
			if _, err := exec.LookPath(tool); err != nil {
				return services{}, fmt.Errorf("%s is not installed; the Kafka demo's tests need Java 17+, Maven, curl and clickhouse-server: "+
					"apt-get install openjdk-17-jre-headless maven curl clickhouse-server", tool)
			}
		}
		dir, err := os.MkdirTemp("", "sluice-demo-services-")
		if err != nil {
			return services{}, err
		}
		servicesDir = dir
		out, err := servicesCmd("start").Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				err = fmt.Errorf("%w: %s", err, ee.Stderr)
			}
			return services{}, fmt.Errorf("scripts/services start (Java 17+, Maven and clickhouse-server are needed: "+
				"apt-get install openjdk-17-jre-headless maven clickhouse-server): %w", err)
		}
		var s services
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "KAFKA_BROKERS="); ok {
				s.kafka = v
			}
			if v, ok := strings.CutPrefix(sc.Text(), "CLICKHOUSE_ADDR="); ok {
				s.clickhouse = v
			}
		}
		if s.kafka == "" || s.clickhouse == "" {
			return s, fmt.Errorf("scripts/services start printed no addresses: %q", out)
		}
		return s, nil
	})
)

func servicesCmd(arg string) *exec.Cmd {
	script, _ := filepath.Abs("../../scripts/services")
	cmd := exec.Command(script, arg)
	cmd.Env = append(os.Environ(), "SLUICE_SERVICES_DIR="+servicesDir, fmt.Sprintf("SLUICE_KAFKA_OWNER=%d", os.Getpid()))
	return cmd
}

// stopServices stops what startServices started, if anything.
func stopServices() {
	if servicesDir == "" {
		return
	}
	if out, err := servicesCmd("stop").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "scripts/services stop: %v: %s\n", err, out)
	}
	os.RemoveAll(servicesDir)
}

func needServices(t *testing.T) services {
	t.Helper()
	s, err := startServices()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// expected reads the input topic and returns the ids of the events the
// demo must store, and the source positions (partition/offset) of those it
// must dead-letter.
func expected(t *testing.T, brokers, topic string) (good map[string]bool, dead map[string]bool) {
	t.Helper()
	good, dead = map[string]bool{}, map[string]bool{}
	for _, r := range readTopic(t, brokers, topic) {
		ev, err := market.Decode(r.Value)
		if err != nil || !market.Known(market.Normalise(ev).Symbol) {
			dead[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = true
			continue
		}
		good[strconv.FormatUint(ev.ID, 10)] = true
	}
	return good, dead
}

// readTopic returns every record of topic, reading up to the end offsets
// it has when called: uncommitted records too, and those of aborted
// transactions (see readCommitted), but not the transactions' markers
// (control records, which it reads to reach the end offsets).
func readTopic(t *testing.T, brokers, topic string) []*kgo.Record {
	t.Helper()
	ctx := ctxTest(t, 60*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends := map[int32]int64{}
	resp, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	resp.Each(func(o kadm.ListedOffset) { ends[o.Partition] = o.Offset })
	var recs []*kgo.Record
	at := map[int32]int64{}
	done := func() bool {
		for p, end := range ends {
			if at[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v (have %v of %v)", topic, ctx.Err(), at, ends)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				recs = append(recs, r)
			}
			at[r.Partition] = r.Offset + 1
		})
	}
	return recs
}

func ctxTest(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func openCH(t *testing.T, addr string) *sql.DB {
	t.Helper()
	db, err := clickhousex.Open(ctxTest(t, 20*time.Second), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// checkStored checks that table holds every good id (rows may repeat after
// a rerun: at least once), no other, and that the downstream topic holds
// every good id after de-duplication and the dead-letter topic every dead
// event; it returns the table's row count.
func checkStored(t *testing.T, s services, names onkafka.Names, good, dead map[string]bool) int64 {
	t.Helper()
	db := openCH(t, s.clickhouse)
	var rows, ids uint64
	var notGood uint64
	if err := db.QueryRowContext(ctxTest(t, 20*time.Second), "SELECT count(), uniqExact(id) FROM "+names.Table).Scan(&rows, &ids); err != nil {
		t.Fatal(err)
	}
	if ids != uint64(len(good)) {
		t.Errorf("ClickHouse: %d distinct ids in %d rows, want %d (N − dead)", ids, rows, len(good))
	}
	r, err := db.QueryContext(ctxTest(t, 20*time.Second), "SELECT DISTINCT id FROM "+names.Table)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var id uint64
		if err := r.Scan(&id); err != nil {
			t.Fatal(err)
		}
		if !good[strconv.FormatUint(id, 10)] {
			notGood++
		}
	}
	r.Close()
	if notGood > 0 {
		t.Errorf("ClickHouse holds %d ids that are not valid events", notGood)
	}

	out := map[string]bool{}
	for _, rec := range readTopic(t, s.kafka, names.Out) {
		id, _, _ := strings.Cut(string(rec.Value), ",")
		if !good[id] {
			t.Fatalf("downstream record %q is not a valid event's", rec.Value)
		}
		out[id] = true
	}
	if len(out) != len(good) {
		t.Errorf("downstream topic: %d distinct events, want %d", len(out), len(good))
	}
	got := map[string]bool{}
	for _, rec := range readTopic(t, s.kafka, names.Dead) {
		var part, off, reason string
		for _, h := range rec.Headers {
			switch h.Key {
			case kafkax.HeaderPartition:
				part = string(h.Value)
			case kafkax.HeaderOffset:
				off = string(h.Value)
			case kafkax.HeaderError:
				reason = string(h.Value)
			}
		}
		if reason == "" {
			t.Errorf("dead letter %q has no reason", rec.Value)
		}
		got[part+"/"+off] = true
	}
	for k := range dead {
		if !got[k] {
			t.Errorf("event at %s/%s is not in the dead-letter topic", names.In, k)
		}
	}
	if len(got) != len(dead) {
		t.Errorf("dead-letter topic: %d distinct events, want %d", len(got), len(dead))
	}
	return int64(rows)
}

// N events in: N − dead rows in ClickHouse, N − dead records downstream,
// every dead-lettered event in the dead-letter topic; the summary's
// counted-back row count equals what it stored.
func TestKafkaDemoStoresEveryEventAndDeadLettersTheMalformed(t *testing.T) {
	s := needServices(t)
	const n = 20000
	var out bytes.Buffer
	f := kafkaTestFlags(s, "e2e", n)
	if err := demoKafka(ctxTest(t, 90*time.Second), nil, f, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log(out.String())
	names := onkafka.NamesFor("e2e")
	good, dead := expected(t, s.kafka, names.In)
	if len(good)+len(dead) != n || len(dead) == 0 {
		t.Fatalf("input topic: %d valid and %d bad events, want %d in all with some bad", len(good), len(dead), n)
	}
	if rows := checkStored(t, s, names, good, dead); rows != int64(len(good)) {
		t.Errorf("ClickHouse: %d rows, want exactly %d in an uninterrupted run", rows, len(good))
	}
	for _, want := range []string{
		fmt.Sprintf("ClickHouse: %d rows in %s, counted back after the run (as many as the pipeline stored)", len(good), names.Table),
		fmt.Sprintf("sluice demo: %d events through the pipeline", n),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if !regexp.MustCompile(fmt.Sprintf(`(?m)^  dead-lettered +%d +records produced to %s`, len(dead), names.Dead)).MatchString(out.String()) {
		t.Errorf("summary does not count %d dead letters:\n%s", len(dead), out.String())
	}
}

func kafkaTestFlags(s services, name string, n int) demoFlags {
	return demoFlags{kafka: s.kafka, clickhouse: s.clickhouse, name: name,
		DemoFlags: cli.DemoFlags{Events: n, Malformed: 0.01, Decoders: 4, Lookup: time.Millisecond}}
}

// SIGTERM in the middle of a run of the built binary drains (summary,
// exit 0); a service then stores the rest: nothing is lost.
func TestKafkaDemoSIGTERMMidRunThenServiceLosesNothing(t *testing.T) {
	s := needServices(t)
	const n = 40000
	d := startDemo(t, "--kafka", s.kafka, "--clickhouse", s.clickhouse, "--name", "sigterm",
		"--events", strconv.Itoa(n), "--lookup", "100ms")
	d.await(t, storedLine)
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := d.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0:\n%s", code, d.out())
	}
	if !strings.Contains(d.out(), "interrupted (terminated), drained") || !strings.Contains(d.out(), "consumed from Kafka → row committed in ClickHouse") {
		t.Fatalf("no drained summary after SIGTERM:\n%s", d.out())
	}
	names := onkafka.NamesFor("sigterm")
	good, dead := expected(t, s.kafka, names.In)
	db := openCH(t, s.clickhouse)
	first, err := clickhousex.Count(ctxTest(t, 20*time.Second), db, names.Table)
	if err != nil {
		t.Fatal(err)
	}
	if first == 0 || first >= int64(len(good)) {
		t.Fatalf("the interrupted run stored %d of %d events: SIGTERM did not land mid-run\n%s", first, len(good), d.out())
	}
	// A service consumes what the group has not committed; it is
	// drained once every event is in the table.
	var out bytes.Buffer
	drain, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	cfg := onkafka.KafkaConfig{Brokers: s.kafka, Names: names, Decoders: 4, Lookup: time.Millisecond, MaxInFlight: 5000, Member: true}
	go func() { served <- serve(ctxTest(t, 120*time.Second), drain, s.clickhouse, 4, cfg, nil, &out) }()
	for deadline := time.Now().Add(60 * time.Second); ; {
		var ids uint64
		if err := db.QueryRowContext(ctxTest(t, 10*time.Second), "SELECT uniqExact(id) FROM "+names.Table).Scan(&ids); err != nil {
			t.Fatal(err)
		}
		if ids >= uint64(len(good)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	if err := <-served; err != nil {
		t.Fatalf("service: %v\n%s", err, out.String())
	}
	t.Logf("interrupted run stored %d rows; the service:\n%s", first, out.String())
	if rows := checkStored(t, s, names, good, dead); rows < int64(len(good)) {
		t.Errorf("%d rows for %d events", rows, len(good))
	}
}

func TestKafkaDemoRejectsANameNoTopicOrTableCanTake(t *testing.T) {
	for _, name := range []string{"", "a b", "x;DROP TABLE t", "9lives", "a.b", "ü", strings.Repeat("n", 300)} {
		for _, cmd := range []string{"demo", "serve"} {
			args := []string{cmd, "--kafka", "127.0.0.1:1", "--clickhouse", "127.0.0.1:1", "--name", name}
			code, _, errOut := runCLI(t, args...)
			if code != 2 || !strings.Contains(errOut, "--name") {
				t.Errorf("%s --name %q: exit %d, stderr %q; want 2 and a message naming --name", cmd, name, code, errOut)
			}
		}
	}
	code, _, errOut := runCLI(t, "serve", "--kafka", "127.0.0.1:1", "--clickhouse", "127.0.0.1:1", "--partitions", "3000000000")
	if code != 2 || !strings.Contains(errOut, "--partitions") {
		t.Errorf("--partitions 3000000000: exit %d, stderr %q; want 2 and a message naming --partitions", code, errOut)
	}
}
