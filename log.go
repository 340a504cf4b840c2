package sluice

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// LogInterval is the shortest time between two "items failed" lines of
// one stage (see [Logger]).
const LogInterval = 10 * time.Second

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

// failureLog counts a stage's failed items and logs them as a summary at
// most once per LogInterval: a storm of failures is a few lines, not one
// per item. Safe for concurrent use by the stage's workers.
type failureLog struct {
	p     *Pipeline
	stage string

	mu       sync.Mutex
	count    int64     // failed since the last line
	last     error     // the latest failure's error
	attempts int       // its calls, retries included
	logged   time.Time // when the last line was written; zero before the first
}

// newFailureLog returns stage's failure log, or nil when the pipeline has
// no logger (a nil *failureLog logs nothing).
func newFailureLog(p *Pipeline, stage string) *failureLog {
	if p.log == nil {
		return nil
	}
	l := &failureLog{p: p, stage: stage}
	p.onFinish(l.flush)
	return l
}

// failed counts one item settled after its last failed call.
func (l *failureLog) failed(err error, attempts int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count++
	l.last, l.attempts = err, attempts
	if now := time.Now(); l.logged.IsZero() || now.Sub(l.logged) >= LogInterval {
		l.logged = now
		l.writeLocked()
	}
}

// flush writes what was counted since the last line, at the pipeline's end.
func (l *failureLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writeLocked()
}

func (l *failureLog) writeLocked() {
	if l.count == 0 {
		return
	}
	l.p.logAt(slog.LevelWarn, "items failed", slog.String("stage", l.stage), slog.Int64("failed", l.count),
		slog.String("error", l.last.Error()), slog.Int("attempts", l.attempts))
	l.count = 0
}

// onFinish registers f to run when Wait has seen every goroutine exit.
func (p *Pipeline) onFinish(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishers = append(p.finishers, f)
}

// finish runs the onFinish functions and logs the pipeline's end; Wait
// calls it once, after every goroutine has exited.
func (p *Pipeline) finish() {
	p.mu.Lock()
	fs := p.finishers
	p.mu.Unlock()
	for _, f := range fs {
		f()
	}
	attrs := []slog.Attr{slog.Duration("elapsed", time.Since(p.start))}
	if p.waitErr != nil {
		attrs = append(attrs, slog.String("error", p.waitErr.Error()))
	}
	p.logAt(slog.LevelInfo, "pipeline finished", attrs...)
}

// logGraceOver logs, once per pipeline, that a drain's grace ended a
// retry.
func (p *Pipeline) logGraceOver() {
	p.graceLogged.Do(func() {
		p.logAt(slog.LevelWarn, "drain grace over", slog.Duration("grace", p.grace))
	})
}
