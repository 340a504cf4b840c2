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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"github.com/sluicehq/sluice/connect/clickhousex"
	"github.com/sluicehq/sluice/connect/kafkax"
)

// The Kafka + ClickHouse load tests run on a real broker and server,
// started once for the package by scripts/services (on the first test that
// needs them) and stopped by TestMain. Missing Java, Maven or ClickHouse
// fails these tests; it does not skip them.

type services struct{ kafka, clickhouse string }

var (
	servicesDir   string
	startServices = sync.OnceValues(func() (services, error) {
		for _, tool := range []string{"java", "mvn", "curl"} {
			if _, err := exec.LookPath(tool); err != nil {
				return services{}, fmt.Errorf("%s is not installed; the Kafka load tests need Java 17+, Maven, curl and clickhouse-server: "+
					"apt-get install openjdk-17-jre-headless maven curl clickhouse-server", tool)
			}
		}
		dir, err := os.MkdirTemp("", "sluice-loadtest-services-")
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
	script, _ := filepath.Abs("../../../scripts/services")
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
// it has when called.
func readTopic(t *testing.T, brokers, topic string) []*kgo.Record {
	t.Helper()
	ctx := ctxTest(t, 60*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
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
			recs = append(recs, r)
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
