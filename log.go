package sluice

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// logAt logs msg at level with the pipeline's name and attrs, when the
// pipeline has a logger that takes the level.
func (p *Pipeline) logAt(level slog.Level, msg string, attrs ...slog.Attr) {
	if p.log == nil || !p.log.Enabled(context.Background(), level) {
		return
	}
	p.log.LogAttrs(context.Background(), level, msg, append([]slog.Attr{slog.String("pipeline", p.name)}, attrs...)...)
}

// logFailed logs the pipeline's first error, naming the stage it came from.
func (p *Pipeline) logFailed(err error) {
	if p.log == nil {
		return
	}
	attrs := []slog.Attr{slog.String("error", err.Error())}
	var se *StageError
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		attrs = append(attrs, slog.String("stage", pe.Stage))
	case errors.As(err, &se):
		attrs = append(attrs, slog.String("stage", se.Stage))
	}
	p.logAt(slog.LevelError, "pipeline failed", attrs...)
}

// logFinished logs the pipeline's end: elapsed time, Wait's error and
// each stage's totals. finish calls it once every goroutine has exited.
func (p *Pipeline) logFinished() {
	if p.log == nil || !p.log.Enabled(context.Background(), slog.LevelInfo) {
		return
	}
	attrs := []slog.Attr{LogDuration("elapsed", time.Since(p.start))}
	if p.waitErr != nil {
		attrs = append(attrs, slog.String("error", p.waitErr.Error()))
	}
	attrs = append(attrs, stageTotals(p.Stats().Stages))
	p.logAt(slog.LevelInfo, "pipeline finished", attrs...)
}

// logGraceOver logs, once per pipeline, that a drain's grace ended a
// retry.
func (p *Pipeline) logGraceOver() {
	p.graceLogged.Do(func() {
		p.logAt(slog.LevelWarn, "drain grace over", LogDuration("grace", p.grace))
	})
}

// stageTotals is the "stages" attribute of "pipeline finished": a group
// per stage, in the order they were built, with what it took in and
// handed on, and what it failed, dead-lettered, dropped and retried when
// any: "stages":{"decode":{"in":100,"out":98,"failed":2,"dead_lettered":2}}.
// A stage after a Batch also shows the items in the batches it took
// ("in_items").
func stageTotals(stages []StageStats) slog.Attr {
	groups := make([]any, 0, len(stages))
	for _, st := range stages {
		a := []any{slog.Int64("in", st.In)}
		if st.InItems != st.In {
			a = append(a, slog.Int64("in_items", st.InItems))
		}
		a = append(a, slog.Int64("out", st.Out))
		for _, c := range []struct {
			key string
			n   int64
		}{{"failed", st.Failed}, {"dead_lettered", st.DeadLettered}, {"dropped", st.Dropped}, {"retries", st.Retries}} {
			if c.n != 0 {
				a = append(a, slog.Int64(c.key, c.n))
			}
		}
		groups = append(groups, slog.Group(st.Name, a...))
	}
	return slog.Group("stages", groups...)
}
