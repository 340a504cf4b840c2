package sluice

// A partition that joins a Window stage behind the others (newly
// assigned, or active again after idling) is judged against its own
// watermark, so its items may fall in windows the stage emitted already
// — a window fed by several partitions. Such an item never makes a
// second revision 0 with only its part: it updates the window while the
// window is kept (Lateness), emitted as the next Revision once the
// watermark, which went back to the newcomer's, passes the window's end
// again; and it is late once its key's window was emitted and dropped.

import (
	"log/slog"
	"time"
)

// updates emits, or schedules, the windows emitted already that the item
// at hand updated: at once when the watermark is past their end (a late
// item), else when it passes it again (the watermark went back to a
// partition that joined behind). It returns false when the pipeline
// stopped.
func (ww *windowWorker[T, K, A]) updates() bool {
	for _, w := range ww.touched {
		if !w.alive || w.rev == 0 || !w.dirty {
			continue
		}
		if w.end <= ww.wm {
			if !ww.emit(w) {
				return false
			}
			continue
		}
		if !w.wait {
			w.wait = true
			ww.dues.push(due[K, A]{at: w.end, w: w, gen: w.gen})
		}
	}
	ww.touched = ww.touched[:0]
	return true
}

// dropEmitted drops window w, emitted and past its lateness, and
// remembers for its key that windows ending by w's end are done: an item
// of the key that falls only in such windows is late, whatever its
// partition's watermark, since a window of it would be a second
// revision 0 holding only part of the window (the memory lasts while the
// key has a window open).
func (ww *windowWorker[T, K, A]) dropEmitted(w *win[K, A]) {
	if sl := ww.m.slotOf(w.owner); sl != nil && w.rev > 0 && w.end > sl.done {
		sl.done, w.owner.doneWM = w.end, ww.wm
	}
	ww.drop(w)
}

// toLate hands on item v of key kw, at event time ts, whose every window
// was emitted and dropped for its key: to the late stream, or counted and
// acknowledged without one (as the router does).
func (ww *windowWorker[T, K, A]) toLate(kw *wkey[K, A], v *T, ts int64) bool {
	wm := kw.doneWM
	if ww.late == nil {
		ww.ws.dropped.Add(1)
		for _, r := range ww.cur {
			r.Ack()
		}
		if ww.ws.loggedDrop.CompareAndSwap(false, true) {
			ww.p.logAt(slog.LevelWarn, "late items dropped: set WindowSpec.Late to keep them", slog.String("stage", ww.ws.s.name),
				slog.Time("event_time", time.Unix(0, ts)), slog.Time("watermark", time.Unix(0, wm)))
		}
		return true
	}
	ww.ws.late.Add(1)
	return ww.late.send(Late[T]{Item: *v, Time: time.Unix(0, ts).UTC(), Watermark: time.Unix(0, wm).UTC()})
}
