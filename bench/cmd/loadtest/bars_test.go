package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"github.com/sluicehq/sluice/connect/clickhousex"
)

// The bars of `loadtest kafka`, on the real broker and server: a run
// prints the tally's summary and checks the bars table, read with FINAL,
// against a plain loop's bars over the input topic.

var (
	barsSummary = regexp.MustCompile(`^bars: (\d+) stored in ClickHouse table \S+ and produced to \S+ \((\d+) of them updates by late events\), (\d+) events too late for any bar`)
	barsLatency = regexp.MustCompile(`^  window end → bar emitted: p50 \S+  p99 \S+  max \S+; → committed in ClickHouse: p50 \S+  p99 \S+  max \S+$`)
	barsInStage = regexp.MustCompile(`^  watermark passed the end \(.*\) → bar emitted: p50 \S+  p99 \S+  max \S+$`)
	barsTick    = regexp.MustCompile(`^    that tick: window end → produced p50 \S+  p99 \S+  max \S+; produced → at the window p50 \S+  p99 \S+  max \S+; first partition past the end → last p50 \S+  p99 \S+  max \S+$`)
	barsChecked = regexp.MustCompile(`^bars check: (\d+) bars in \S+ with FINAL \(\d+ rows before merging\) against (\d+) from a plain loop over the (\d+) records of \S+ \(it finds (\d+) events late, the pipeline (\d+)\): 0 missing, 0 different, 0 extra$`)
)

// checkBarsOutput checks that out holds the bars summary and a check
// with no mismatch, of at least one bar and one late event, and returns
// how many bars the check compared.
func checkBarsOutput(t *testing.T, out string) int {
	t.Helper()
	var summary, lat, stage, tick int
	checked := -1
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		switch {
		case barsSummary.MatchString(line):
			summary++
		case barsLatency.MatchString(line):
			lat++
		case barsInStage.MatchString(line):
			stage++
		case barsTick.MatchString(line):
			tick++
		}
		if m := barsChecked.FindStringSubmatch(line); m != nil {
			got, _ := strconv.Atoi(m[1])
			want, _ := strconv.Atoi(m[2])
			late, _ := strconv.Atoi(m[4])
			if got != want || got == 0 || late == 0 || m[4] != m[5] {
				t.Errorf("bars check %q: want as many bars in the table as the loop's (> 0), and the same late events (> 0)", line)
			}
			checked = got
		}
	}
	if summary != 1 || lat != 1 || stage != 1 || tick != 1 {
		t.Errorf("bars summary: %d count lines, %d end → emitted lines, %d watermark → emitted lines, %d lifting-tick lines, want 1 each", summary, lat, stage, tick)
	}
	if checked < 0 {
		t.Fatalf("no bars check with 0 missing, 0 different, 0 extra:\n%s", out)
	}
	return checked
}

// A backlog run computes the bars, stores every event (the flush's too)
// and finds its bars equal to the plain loop's; then a bar changed and a
// bar added in the table are each found by the check, which fails.
func TestKafkaBacklogRunChecksItsBarsAgainstAPlainLoop(t *testing.T) {
	s := needServices(t)
	const events = 12000
	d := startDemo(t, "--kafka", s.kafka, "--clickhouse", s.clickhouse, "--name", "barsbacklog", "--events", strconv.Itoa(events))
	if code := d.wait(120 * time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, d.Output())
	}
	out := d.Output()
	t.Log(out)
	checkBarsOutput(t, out)
	names := onkafka.NamesFor("barsbacklog")
	good, dead := expected(t, s.kafka, names.In)
	if flush := flushIn(good); len(good)+len(dead) != events+onkafka.FlushEvents || flush != onkafka.FlushEvents {
		t.Fatalf("input topic: %d valid and %d bad events, %d of the valid ones the flush's, want %d in all besides the flush's %d", len(good), len(dead), flush, events, onkafka.FlushEvents)
	}
	checkStored(t, s, names, good, dead)

	// The check finds a bar changed and a bar added.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := clickhousex.Open(ctx, s.clickhouse)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b := &barsLab{names: onkafka.BarNamesFor("barsbacklog"), in: names.In, cut: time.Now().Add(30 * time.Minute).UnixNano()}
	var cfg onkafka.KafkaConfig
	b.tally = onkafka.TallyBars(&cfg)
	bars, _, err := onkafka.ReadBars(ctx, db, b.names.Table)
	if err != nil || len(bars) == 0 {
		t.Fatalf("reading the bars back: %d bars, %v", len(bars), err)
	}
	changed := market.SortedBars(bars)[0]
	changed.Trades++ // the higher version: FINAL keeps it
	changed.Volume++
	added := changed
	added.Start -= int64(time.Hour)
	if err := onkafka.NewBarWriter(db, b.names.Table).Write(ctx, []market.Bar{changed, added}); err != nil {
		t.Fatal(err)
	}
	var w strings.Builder
	err = b.check(ctx, db, s.kafka, &w)
	if err == nil || !strings.Contains(err.Error(), "0 missing, 1 different, 1 extra") {
		t.Errorf("check of a table with a bar changed and one added: %v, want 0 missing, 1 different, 1 extra:\n%s", err, w.String())
	}
}

// flushIn counts the flush's events among ids.
func flushIn(ids keys) int {
	n := 0
	for k := range ids {
		if id, _ := strconv.ParseUint(k, 10, 64); id >= flushFirst {
			n++
		}
	}
	return n
}
