package sluice

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// LogInterval is the shortest time between two lines of one [Tally]: a
// stage's "items failed", a connector's failed acks or inserts.
const LogInterval = 10 * time.Second

// Tally counts events of one kind — failed items, failed acks, slow
// inserts — and writes them to a logger as one line at most once per
// [LogInterval]: the first event at once, then what was counted since,
// with the count and the latest event's attributes. A storm of failures is
// a few lines, not one per event. The pipeline's stages and every
// connector log their storms with it.
//
// Set the fields before the first [Tally.Add] and leave them; the zero
// Tally, one with a nil Logger, and a nil *Tally count nothing and log
// nothing. Its methods are safe for concurrent use. Add costs a lock and a
// clock read, and a log line when one is due.
type Tally struct {
	Logger *slog.Logger // where the lines go; nil: nowhere
	Level  slog.Level   // the lines' level
	Msg    string       // the lines' message ("acks failed")
	// CountKey is the count's attribute key; "count" when empty.
	CountKey string
	// Attrs are written first in every line (the stage, the table).
	Attrs []slog.Attr

	mu     sync.Mutex
	count  int64
	latest []slog.Attr
	logged time.Time // when the last line was written; zero before the first
}

// Add counts n events, the latest described by latest (its error, say):
// the line is written at once if none was in the last LogInterval.
func (t *Tally) Add(n int64, latest ...slog.Attr) {
	if t == nil || t.Logger == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.count += n
	t.latest = latest
	if t.logged.IsZero() || time.Since(t.logged) >= LogInterval {
		t.writeLocked()
	}
}

// FlushDue writes what was counted if LogInterval has passed since the
// last line: call it from a loop that ticks, so that the last events of a
// storm are not held until the next one or [Tally.Flush].
func (t *Tally) FlushDue() {
	if t == nil || t.Logger == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.count > 0 && time.Since(t.logged) >= LogInterval {
		t.writeLocked()
	}
}

// Flush writes what was counted since the last line, if anything: call it
// when what is counted ends.
func (t *Tally) Flush() {
	if t == nil || t.Logger == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writeLocked()
}

func (t *Tally) writeLocked() {
	if t.count == 0 {
		return
	}
	if t.Logger.Enabled(context.Background(), t.Level) {
		key := t.CountKey
		if key == "" {
			key = "count"
		}
		attrs := make([]slog.Attr, 0, len(t.Attrs)+1+len(t.latest))
		attrs = append(append(append(attrs, t.Attrs...), slog.Int64(key, t.count)), t.latest...)
		t.Logger.LogAttrs(context.Background(), t.Level, t.Msg, attrs...)
	}
	t.count, t.latest, t.logged = 0, nil, time.Now()
}

// LogDuration is the attribute of a duration as logs show it: text that
// reads the same in every handler ("grace":"5s" in JSON, where
// [slog.Duration] writes integer nanoseconds), rounded to three figures
// or a microsecond at the most ("1.23s", "850ms", "12µs").
func LogDuration(key string, d time.Duration) slog.Attr {
	return slog.String(key, roundDuration(d).String())
}

// roundDuration keeps d's three leading figures, and nothing under a
// microsecond unless d is under one.
func roundDuration(d time.Duration) time.Duration {
	a := d.Abs()
	if a < time.Microsecond {
		return d
	}
	unit := time.Microsecond
	for unit*1000 <= a && unit < time.Hour {
		unit *= 10
	}
	return d.Round(unit)
}
