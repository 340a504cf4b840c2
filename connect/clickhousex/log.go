package clickhousex

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice"
)

// Logger makes a [Writer] log what an operator needs to know to l, with
// the table's name (attribute "table"):
//
//	level  message                      when
//	Info   "dead connections replaced"  a connection the pool kept was found dead as an
//	                                    insert began, and the insert took another
//	                                    ("error")
//	Warn   "inserts failed"             an insert failed: it is retried if the stage has
//	                                    sluice.Retry ("rows", "error")
//	Warn   "rows left out"              rows held values the driver rejected and were
//	                                    inserted without ("error")
//	Warn   "slow inserts"               an insert took longer than SlowInsert ("rows",
//	                                    "elapsed")
//
// Each line counts the events of its kind since the last one ("count")
// and describes the latest: a kind is logged at most once per
// [sluice.LogInterval] (the first at once), and what is left when an
// [Insert] or [InsertBatches] stage's pipeline ends, so a storm of
// failures is a few lines. Nothing is logged per row, nor per insert that
// succeeds in time. The password ([Password]) is never logged: no line
// shows the connection's settings. A nil l, the default, means no logs.
func Logger(l *slog.Logger) WriterOption {
	return writerOptionFunc(func(c *writerConfig) { c.log = l })
}

// DefaultSlowInsert is the time past which an insert counts as slow
// unless [SlowInsert] says otherwise.
const DefaultSlowInsert = 5 * time.Second

// SlowInsert sets the time past which a [Logger] counts an insert as slow
// (default [DefaultSlowInsert]). Panics if d ≤ 0.
func SlowInsert(d time.Duration) WriterOption {
	if d <= 0 {
		panic(fmt.Sprintf("clickhousex: SlowInsert must be > 0, got %v", d))
	}
	return writerOptionFunc(func(c *writerConfig) { c.slow = d })
}

// writerLog is a Writer's tallies, each a line per sluice.LogInterval at
// most; nil without a Logger.
type writerLog struct {
	slow                        time.Duration
	replaced, failed, left, lag sluice.Tally
}

func newWriterLog(l *slog.Logger, table string, slow time.Duration) *writerLog {
	if l == nil {
		return nil
	}
	l = l.With(slog.String("table", table))
	return &writerLog{slow: slow,
		replaced: sluice.Tally{Logger: l, Level: slog.LevelInfo, Msg: "dead connections replaced"},
		failed:   sluice.Tally{Logger: l, Level: slog.LevelWarn, Msg: "inserts failed"},
		left:     sluice.Tally{Logger: l, Level: slog.LevelWarn, Msg: "rows left out"},
		lag:      sluice.Tally{Logger: l, Level: slog.LevelWarn, Msg: "slow inserts"},
	}
}

// inserted notes an insert of rows that took elapsed and ended with err;
// badValue: err is about a row's value, a row that is left out and
// logged as such.
func (g *writerLog) inserted(rows int, elapsed time.Duration, err error, badValue bool) {
	if g == nil {
		return
	}
	if badValue {
		return
	}
	if err != nil {
		g.failed.Add(1, slog.Int("rows", rows), slog.String("error", err.Error()))
	} else if elapsed > g.slow {
		g.lag.Add(1, slog.Int("rows", rows), sluice.LogDuration("elapsed", elapsed))
	}
	g.flushDue()
}

// flushDue writes the tallies whose interval has passed.
func (g *writerLog) flushDue() {
	for _, t := range []*sluice.Tally{&g.replaced, &g.failed, &g.left, &g.lag} {
		t.FlushDue()
	}
}

// flush writes what the tallies hold.
func (g *writerLog) flush() {
	for _, t := range []*sluice.Tally{&g.replaced, &g.failed, &g.left, &g.lag} {
		t.Flush()
	}
}

// flushAtEnd writes what the tallies hold when p ends (its context is
// cancelled once Wait has seen every stage finish, or when it fails).
func (g *writerLog) flushAtEnd(p *sluice.Pipeline) {
	if g != nil {
		context.AfterFunc(p.Context(), g.flush)
	}
}
