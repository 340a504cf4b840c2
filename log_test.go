package sluice_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

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
