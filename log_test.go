package sluice_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// records is a slog.Handler that keeps every record, for tests.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// with returns the records whose message is msg, each as its attributes.
func (r *records) with(msg string) []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]string
	for _, rec := range r.recs {
		if rec.Message != msg {
			continue
		}
		attrs := map[string]string{"level": rec.Level.String()}
		rec.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		out = append(out, attrs)
	}
	return out
}

func TestAFailedPipelineLogsItsErrorAndStageOnce(t *testing.T) {
	var recs records
	p := sluice.New(context.Background(), sluice.Named("etl"), sluice.Logger(slog.New(&recs)))
	sluice.ForEach(p, "write", sluice.FromSlice(p, "src", ints(100)), 2, func(context.Context, int) error {
		return errors.New("disk full")
	})
	if err := p.Wait(); err == nil {
		t.Fatal("got nil, want the stage's error")
	}
	failed := recs.with("pipeline failed")
	if len(failed) != 1 || failed[0]["stage"] != "write" || failed[0]["pipeline"] != "etl" || failed[0]["level"] != "ERROR" {
		t.Fatalf("got %v, want one ERROR record naming pipeline etl and stage write", failed)
	}
	if fin := recs.with("pipeline finished"); len(fin) != 1 || fin[0]["error"] == "" {
		t.Fatalf("got %v, want one finish record with the error", fin)
	}
}

func TestADrainAndACancelAreLoggedAtInfo(t *testing.T) {
	var recs records
	ctx, cancel := context.WithCancel(context.Background())
	p := sluice.New(ctx, sluice.Logger(slog.New(&recs)))
	src := sluice.From(p, "endless", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for out.Send(1) {
		}
		return nil
	})
	sluice.ForEach(p, "sink", src, 1, func(context.Context, int) error { return nil })
	p.Drain()
	p.Drain()
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if d := recs.with("drain begun"); len(d) != 1 || d[0]["level"] != "INFO" || d[0]["grace"] == "" {
		t.Fatalf("got %v, want one INFO drain record with its grace", d)
	}
	cancel()
	q := sluice.New(ctx, sluice.Logger(slog.New(&recs)))
	sluice.Collect(q, "c", sluice.FromSlice(q, "src", ints(10)))
	_ = q.Wait()
	if c := recs.with("pipeline cancelled"); len(c) != 1 || c[0]["level"] != "INFO" {
		t.Fatalf("got %v, want one INFO cancel record", c)
	}
	if f := recs.with("pipeline failed"); len(f) != 0 {
		t.Fatalf("got %v, want no failure logged for a cancel", f)
	}
}

func TestAPipelineWithoutALoggerLogsNothing(t *testing.T) {
	var recs records
	old := slog.Default()
	slog.SetDefault(slog.New(&recs))
	defer slog.SetDefault(old)
	p := sluice.New(context.Background())
	sluice.ForEach(p, "write", sluice.FromSlice(p, "src", ints(10)), 1, func(context.Context, int) error { return errors.New("x") })
	_ = p.Wait()
	if n := len(recs.recs); n != 0 {
		t.Fatalf("got %d records on the default logger, want none", n)
	}
}

// TestAStormOfDeadLettersLogsABoundedNumberOfLines dead-letters 10,000
// items: the stage logs its failures as counts, a line at the first and
// one at the end, not a line per item.
func TestAStormOfDeadLettersLogsABoundedNumberOfLines(t *testing.T) {
	var recs records
	p := sluice.New(context.Background(), sluice.Logger(slog.New(&recs)))
	var dead sluice.Stream[sluice.Failed[int]]
	sluice.ForEach(p, "write", sluice.FromSlice(p, "src", ints(10_000)), 4, func(context.Context, int) error {
		return errors.New("rejected")
	}, sluice.DeadLetter(&dead))
	sluice.ForEach(p, "dlq", dead, 1, func(context.Context, sluice.Failed[int]) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	lines := recs.with("items failed")
	if len(lines) < 1 || len(lines) > 3 {
		t.Fatalf("got %d 'items failed' lines, want 1 to 3 for a burst shorter than LogInterval", len(lines))
	}
	total := 0
	for _, l := range lines {
		if l["stage"] != "write" || l["level"] != "WARN" || l["error"] != "rejected" {
			t.Fatalf("got %v, want WARN lines naming stage write and the error", l)
		}
		n, err := strconv.Atoi(l["failed"])
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total != 10_000 {
		t.Fatalf("got lines counting %d failures, want 10000", total)
	}
	if n := len(recs.recs); n > 6 {
		t.Fatalf("got %d records in all, want a handful", n)
	}
}

// TestADrainWhoseGraceEndsARetryLogsItOnce drains a pipeline whose items
// keep failing with a long backoff: the grace's end is logged once.
func TestADrainWhoseGraceEndsARetryLogsItOnce(t *testing.T) {
	var recs records
	p := sluice.New(context.Background(), sluice.Logger(slog.New(&recs)), sluice.DrainGrace(0))
	src := sluice.From(p, "src", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := range 4 {
			if !out.Send(i) {
				return nil
			}
		}
		out.Flush()
		<-out.Done()
		return nil
	})
	var dead sluice.Stream[sluice.Failed[int]]
	sluice.ForEach(p, "call", src, 4, func(context.Context, int) error { return errors.New("busy") },
		sluice.Retry(100, time.Hour, time.Hour), sluice.DeadLetter(&dead))
	sluice.ForEach(p, "dlq", dead, 1, func(context.Context, sluice.Failed[int]) error { return nil })
	time.Sleep(50 * time.Millisecond)
	p.Drain()
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if g := recs.with("drain grace over"); len(g) != 1 || g[0]["level"] != "WARN" {
		t.Fatalf("got %v, want one WARN line", g)
	}
	var order []string
	for _, r := range recs.recs {
		if r.Message == "drain begun" || r.Message == "drain grace over" {
			order = append(order, r.Message)
		}
	}
	if !slices.Equal(order, []string{"drain begun", "drain grace over"}) {
		t.Fatalf("got the lines %q, want the drain begun before its grace is over", order)
	}
}

// TestAMinuteOfFailuresLogsALineEveryLogInterval fails an item every 10
// ms for a minute (in synctest's time): the stage writes one line per
// LogInterval, not one per item.
func TestAMinuteOfFailuresLogsALineEveryLogInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var recs records
		p := sluice.New(context.Background(), sluice.Logger(slog.New(&recs)))
		src := sluice.From(p, "src", func(ctx context.Context, out *sluice.Emitter[int]) error {
			for i := range 6000 {
				if !out.Send(i) || !out.Flush() {
					return nil
				}
				time.Sleep(10 * time.Millisecond)
			}
			return nil
		})
		sluice.ForEach(p, "write", src, 1, func(context.Context, int) error { return errors.New("rejected") }, sluice.SkipErrors())
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		lines := recs.with("items failed")
		if want := int(time.Minute/sluice.LogInterval) + 1; len(lines) < want-1 || len(lines) > want+1 {
			t.Fatalf("got %d lines for a minute of failures, want about %d (one per %v)", len(lines), want, sluice.LogInterval)
		}
	})
}

// TestAutoDecisionsAreLogged checks a change of an Auto stage's worker
// count is logged with its reason.
func TestAutoDecisionsAreLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var recs records
		p := sluice.New(context.Background(), sluice.Logger(slog.New(&recs)))
		src := sluice.From(p, "src", func(ctx context.Context, out *sluice.Emitter[int]) error {
			for i := range 3000 {
				if !out.Send(i) {
					return nil
				}
			}
			return nil
		})
		sluice.ForEach(p, "call", src, 1, func(context.Context, int) error {
			time.Sleep(time.Millisecond) // waits on a dependency: more workers help
			return nil
		}, sluice.Auto(1, 64))
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		changes := recs.with("workers changed")
		if len(changes) == 0 {
			t.Fatal("got no 'workers changed' line for a stage whose count grew")
		}
		c := changes[0]
		if c["stage"] != "call" || c["reason"] == "" || c["from"] == "" || c["to"] == "" {
			t.Fatalf("got %v, want the stage, the counts and the reason", c)
		}
	})
}
