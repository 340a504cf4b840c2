package sluice_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

func TestATallyLogsTheFirstEventAtOnceThenOneLinePerInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var recs records
		tl := &sluice.Tally{Logger: slog.New(&recs), Level: slog.LevelWarn, Msg: "acks failed",
			Attrs: []slog.Attr{slog.String("stream", "orders")}}
		tl.Add(1, slog.String("error", "first"))
		for i := range 99 {
			tl.Add(1, slog.String("error", "e"+string(rune('a'+i%26))))
		}
		tl.Add(2, slog.String("error", "last"))
		if got := recs.with("acks failed"); len(got) != 1 || got[0]["count"] != "1" || got[0]["error"] != "first" ||
			got[0]["stream"] != "orders" || got[0]["level"] != "WARN" {
			t.Fatalf("got %v, want one WARN line at once: stream=orders count=1 error=first", got)
		}
		tl.FlushDue() // not due yet
		if got := recs.with("acks failed"); len(got) != 1 {
			t.Fatalf("got %d lines before the interval passed, want 1", len(got))
		}
		time.Sleep(sluice.LogInterval)
		tl.FlushDue()
		got := recs.with("acks failed")
		if len(got) != 2 || got[1]["count"] != "101" || got[1]["error"] != "last" {
			t.Fatalf("got %v, want a second line counting the 101 events since, with the latest's error", got)
		}
		tl.Flush() // nothing left
		tl.Add(3, slog.String("error", "later"))
		if got := recs.with("acks failed"); len(got) != 2 {
			t.Fatalf("got %d lines, want 2: the interval has not passed since the last line", len(got))
		}
		tl.Flush()
		if got := recs.with("acks failed"); len(got) != 3 || got[2]["count"] != "3" {
			t.Fatalf("got %v, want Flush to write the 3 events left", got)
		}
	})
}

func TestATallyWithoutALoggerCountsNothing(t *testing.T) {
	var nilTally *sluice.Tally
	nilTally.Add(1)
	nilTally.FlushDue()
	nilTally.Flush()
	var zero sluice.Tally
	zero.Add(1)
	zero.Flush()
}

func TestATallyIsSafeForConcurrentUseAndLosesNoCount(t *testing.T) {
	var recs records
	tl := &sluice.Tally{Logger: slog.New(&recs), Msg: "failed", CountKey: "failed"}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				tl.Add(1)
			}
		})
	}
	wg.Wait()
	tl.Flush()
	var total int
	for _, l := range recs.with("failed") {
		n := 0
		for _, c := range l["failed"] {
			n = n*10 + int(c-'0')
		}
		total += n
	}
	if total != 8000 {
		t.Fatalf("got %d counted over the lines, want 8000", total)
	}
}

func TestLogDurationReadsTheSameInJSONAndText(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{5 * time.Second, "5s"}, {1234567891 * time.Nanosecond, "1.23s"}, {850*time.Millisecond + 123*time.Microsecond, "850ms"},
		{12345 * time.Nanosecond, "12µs"}, {500, "500ns"}, {90 * time.Minute, "1h30m0s"}, {-1500 * time.Millisecond, "-1.5s"},
	} {
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).LogAttrs(context.Background(), slog.LevelInfo, "x", sluice.LogDuration("d", c.d))
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line["d"] != c.want {
			t.Errorf("got %q for %v, want %q", line["d"], c.d, c.want)
		}
	}
}

// jsonLines returns the JSON log lines of buf whose message is msg.
func jsonLines(t *testing.T, buf *bytes.Buffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func TestPipelineFinishedLogsEachStagesTotalsAndReadableDurations(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	p := sluice.New(context.Background(), sluice.Named("etl"), sluice.Logger(log))
	src := sluice.FromSlice(p, "src", ints(100))
	bad := errors.New("bad")
	var dead sluice.Stream[sluice.Failed[int]]
	ok := sluice.Map(p, "check", src, 2, func(_ context.Context, v int) (int, error) {
		if v%10 == 0 {
			return 0, bad
		}
		return v, nil
	}, sluice.DeadLetter(&dead))
	sluice.ForEach(p, "dead", dead, 1, func(context.Context, sluice.Failed[int]) error { return nil })
	sluice.ForEach(p, "store", sluice.Batch(p, "batch", ok, 7, time.Hour), 1, func(context.Context, []int) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	fin := jsonLines(t, &buf, "pipeline finished")
	if len(fin) != 1 {
		t.Fatalf("got %d finish lines, want 1:\n%s", len(fin), buf.String())
	}
	if _, ok := fin[0]["elapsed"].(string); !ok {
		t.Fatalf("got elapsed %v (%T), want a duration as text", fin[0]["elapsed"], fin[0]["elapsed"])
	}
	stages, _ := fin[0]["stages"].(map[string]any)
	want := map[string]map[string]any{
		"src":   {"in": 0.0, "out": 100.0},
		"check": {"in": 100.0, "out": 90.0, "failed": 10.0, "dead_lettered": 10.0},
		"dead":  {"in": 10.0, "out": 0.0},
		"batch": {"in": 90.0, "out": 13.0},
		"store": {"in": 13.0, "in_items": 90.0, "out": 0.0},
	}
	for name, w := range want {
		got, _ := stages[name].(map[string]any)
		if len(got) != len(w) {
			t.Errorf("stage %s: got %v, want %v", name, got, w)
			continue
		}
		for k, v := range w {
			if got[k] != v {
				t.Errorf("stage %s: got %s=%v, want %v", name, k, got[k], v)
			}
		}
	}
}
