package sluice

// Idle partitions: a partition silent for spec.Idle stops holding a
// window stage's watermark back, and rejoins when it speaks.

import (
	"log/slog"
	"math"
	"time"
)

// checkIdle sets aside the partitions silent for Idle, or, with no Idle,
// logs once a partition that holds the watermark back for long.
func (r *windowRouter[T, K, A]) checkIdle() {
	if len(r.list) < 2 {
		return
	}
	changed := false
	for _, pt := range r.list {
		silent := r.now - pt.seen
		switch {
		case pt.idle:
		case r.ws.idle > 0 && silent >= r.ws.idle:
			pt.idle, changed = true, true
			r.ws.idleNow.Add(1)
			r.ws.p.logAt(slog.LevelInfo, "window partition idle: the watermark no longer waits for it", slog.String("stage", r.ws.s.name),
				slog.String("partition", pt.name), slog.Duration("idle", time.Duration(silent)))
		case r.ws.idle == 0 && !pt.warned && pt == r.minP && silent >= r.stall:
			pt.warned = true
			r.ws.p.logAt(slog.LevelWarn, "window watermark held back by a silent partition; set WindowSpec.Idle to stop waiting for it",
				slog.String("stage", r.ws.s.name), slog.String("partition", pt.name), slog.Duration("silent", time.Duration(silent)))
		}
	}
	if changed {
		r.recompute()
	}
}

// alarm wakes the router when a partition would become idle, or, with no
// Idle, when a silent partition would be logged.
func (r *windowRouter[T, K, A]) alarm() <-chan time.Time {
	if r.time == nil || len(r.list) < 2 {
		return nil
	}
	at := int64(math.MaxInt64)
	for _, pt := range r.list {
		switch {
		case pt.idle:
		case r.ws.idle > 0:
			at = min(at, pt.seen+r.ws.idle)
		case !pt.warned && pt == r.minP:
			at = min(at, pt.seen+r.stall)
		}
	}
	if at == math.MaxInt64 {
		return nil
	}
	r.timer.Reset(time.Duration(max(0, at-nowNs())))
	return r.timer.C
}
