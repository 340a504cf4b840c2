package sluice

import (
	"context"
	"math"
	"time"
)

// win is one window of one key on a Window stage's worker.
// What an item's fold touches (items, rev, dirty, start, end, acc, rs)
// comes first, together.
type win[K comparable, A any] struct {
	items int
	rev   int    // the Revision of its next emission
	gen   uint32 // bumped when the record is dropped, to be reused
	dirty bool   // folded into since its last emission
	alive bool   // false once dropped or merged away
	wait  bool   // an update due when the watermark passes its end again (window_rejoin.go)
	start int64
	end   int64
	acc   A
	rs    []Receipt // the receipts of the inputs folded since its last emission

	owner *wkey[K, A]
	// tr is the trace of the item that opened it, which its panes
	// continue, when the pipeline traces (see traceSlot).
	tr context.Context
}

// wkey is one key's open windows, by start.
type wkey[K comparable, A any] struct {
	k    K
	h    uint64 // the router's hash of k
	wins []*win[K, A]
	// doneWM is the watermark that dropped its latest window emitted
	// and dropped (its end is its slot's done; window_rejoin.go).
	doneWM int64
}

// windowWorker is one worker of a Window stage: the windows of the keys
// it owns, and when each is due.
type windowWorker[T any, K comparable, A any] struct {
	ws    *windowShared
	p     *Pipeline
	out   *sender[Pane[K, A]]
	key   func(T) K
	spec  WindowSpec[T, K, A]
	rc    receipts[T]
	m     keyIndex[K, A]
	dues  dues[K, A]
	free  []*win[K, A]  // dropped window records, to be reused
	freeK []*wkey[K, A] // dropped keys' records, to be reused
	wm    int64         // the watermark as this worker knows it
	c     *windowCounters
	timer *time.Timer // processing time: fires when the next window is due
	now   int64       // processing time: the time of the batch at hand
	// spec.Windows and spec.Lateness, read per item: sessions or not,
	// the size and slide of aligned windows.
	sessions              bool
	size, slide, lateness int64

	// The receipts of the item at hand, collected by visit.
	cur   []Receipt
	visit func(Receipt)
	lastS Settler
	lastH *heldCount
	// The windows emitted already that the item at hand was folded into.
	touched []*win[K, A]
	revoked goneView         // the partitions taken away (window_revoke.go)
	late    *sender[Late[T]] // the late stream, nil without one
}

func newWindowWorker[T any, K comparable, A any](ws *windowShared, kc *keyedCore[T, Pane[K, A]], out *sender[Pane[K, A]], late *sender[Late[T]], key func(T) K, spec WindowSpec[T, K, A]) *windowWorker[T, K, A] {
	ww := &windowWorker[T, K, A]{ws: ws, p: ws.p, out: out, late: late, key: key, spec: spec, rc: kc.rc,
		wm: math.MinInt64, c: new(windowCounters), sessions: spec.Windows.sessions(),
		size: int64(spec.Windows.size), slide: int64(spec.Windows.slide), lateness: ws.lateness}
	ws.counters = append(ws.counters, ww.c)
	ww.visit = func(r Receipt) { ww.cur = append(ww.cur, r) }
	if spec.Time == nil {
		ww.timer = time.NewTimer(time.Hour)
		ww.timer.Stop()
	}
	return ww
}

func (ww *windowWorker[T, K, A]) keys() int64 { return ww.c.keys.Load() }

func (ww *windowWorker[T, K, A]) handle(m *kmsg[T]) error {
	if m.ctl {
		return ww.advance(m.wm)
	}
	ts, wm, lw := m.ts, m.wm, m.lw
	if ww.timer != nil {
		ts, wm, lw = ww.now, ww.now, ww.now
	}
	return ww.item(m.h, ww.key(m.v), &m.v, ts, wm, lw)
}

// item folds item v of key k (hash h) at event time ts into its windows,
// the router's watermark being wm and the item's partition's lw; the
// router calls it at once when this worker runs on its goroutine.
func (ww *windowWorker[T, K, A]) item(h uint64, k K, v *T, ts, wm, lw int64) error {
	if wm != ww.wm {
		if err := ww.advance(wm); err != nil {
			return err
		}
	}
	sl := ww.m.get(h, k)
	if sl == nil {
		sl = ww.m.put(ww.newKey(k, h))
		ww.c.keys.Store(int64(ww.m.n))
	}
	kw := sl.kw
	ww.cur = ww.cur[:0]
	if ww.rc != nil {
		ww.rc(v, settleOp{visit: ww.visit})
	}
	var joined int
	if ww.sessions {
		joined = ww.session(sl, ts, lw, v)
	} else {
		joined = ww.aligned(sl, ts, lw, v)
	}
	// Most items join one window, hold no receipt and update no window
	// emitted already: nothing more to do for them.
	if (joined != 1 || len(ww.cur) > 0 || len(ww.touched) > 0) && !ww.afterJoin(kw, v, ts, joined) {
		return errStopped
	}
	if len(ww.dues) > 0 && ww.dues[0].at <= ww.wm {
		return ww.fireDue()
	}
	return nil
}

// afterJoin holds the receipts of item v (of key record kw, at ts) in the
// joined windows it went into, sends it to the late stream if it joined
// none, and re-emits the windows emitted already that it updated; false
// when the pipeline stops.
func (ww *windowWorker[T, K, A]) afterJoin(kw *wkey[K, A], v *T, ts int64, joined int) bool {
	switch {
	case joined == 0:
		// Every window of the item was emitted and dropped for its key
		// (the router sends the items past their lateness by the
		// watermark to the late stream itself): late.
		if !ww.toLate(kw, v, ts) {
			return false
		}
	case joined > 1:
		for _, r := range ww.cur {
			r.hold(int32(joined - 1))
		}
	}
	if joined > 0 {
		for _, r := range ww.cur {
			if r.t.to != ww.lastS {
				ww.lastS, ww.lastH = r.t.to, ww.ws.heldFor(r.t.to)
			}
			ww.ws.hold(ww.lastH, r, joined)
		}
	}
	if joined == 0 && len(kw.wins) == 0 { // an item joined is in a window of its key
		ww.dropKey(kw)
	}
	return len(ww.touched) == 0 || ww.updates()
}

// advance sets the worker's watermark to the router's, wm, and emits what
// is due. It goes back when a partition joins behind the others.
func (ww *windowWorker[T, K, A]) advance(wm int64) error {
	if wm == ww.wm {
		return nil
	}
	ww.wm = wm
	if len(ww.dues) == 0 || ww.dues[0].at > wm {
		return nil // nothing due: most advances, one per item
	}
	return ww.fireDue()
}

// fireDue emits the windows whose end the watermark passed (and any
// window updated after that), and drops those past their lateness.
func (ww *windowWorker[T, K, A]) fireDue() error {
	for len(ww.dues) > 0 && ww.dues[0].at <= ww.wm {
		d := ww.dues.pop()
		w := d.w
		if !w.alive || w.gen != d.gen {
			continue
		}
		if d.purge {
			if satAdd(w.end, ww.ws.lateness) != d.at {
				continue // a session that grew: a later entry is due
			}
		} else if w.end != d.at {
			continue
		}
		if w.dirty && ww.ws.revokes.Load() != 0 && ww.discardRevoked(w) {
			continue
		}
		if w.dirty && !ww.emit(w) {
			return errStopped
		}
		if !d.purge && ww.ws.lateness > 0 {
			ww.dues.push(due[K, A]{at: satAdd(w.end, ww.ws.lateness), w: w, gen: w.gen, purge: true})
			continue
		}
		ww.dropEmitted(w)
	}
	return nil
}

// emit hands w's Pane on, with a receipt that settles the receipts held
// since its last emission.
func (ww *windowWorker[T, K, A]) emit(w *win[K, A]) bool {
	if ww.p.halted() {
		return false
	}
	pn := Pane[K, A]{Key: w.owner.k, Start: time.Unix(0, w.start).UTC(), End: time.Unix(0, w.end).UTC(), Acc: w.acc, Items: w.items, Revision: w.rev}
	if len(w.rs) > 0 {
		pn.Receipt = NewReceipt(&paneSettler{ws: ww.ws, rs: w.rs, c: ww.c}, 0)
		w.rs = nil
	}
	if w.rev > 0 {
		ww.c.updated.Add(1)
	}
	ww.c.emitted.Add(1)
	w.rev++
	w.dirty, w.wait = false, false
	ww.out.stampWith(w.tr)
	return ww.out.send(pn)
}

// drop removes w from its key, and the key if it has no window left.
func (ww *windowWorker[T, K, A]) drop(w *win[K, A]) {
	ww.c.open.Add(-1)
	kw := w.owner
	for i, x := range kw.wins {
		if x == w {
			kw.wins = append(kw.wins[:i], kw.wins[i+1:]...)
			kw.wins[len(kw.wins):cap(kw.wins)][0] = nil
			break
		}
	}
	if len(kw.wins) == 0 {
		ww.dropKey(kw)
	}
	ww.release(w)
}

// release keeps the record of a window dropped or merged away for reuse;
// its gen moves on, so that the heap entries still pointing at it are
// skipped.
func (ww *windowWorker[T, K, A]) release(w *win[K, A]) {
	if w.owner != nil {
		if sl := ww.m.slotOf(w.owner); sl != nil && sl.last == w {
			sl.last = nil
		}
	}
	*w = win[K, A]{gen: w.gen + 1}
	ww.free = append(ww.free, w)
}

func (ww *windowWorker[T, K, A]) dropKey(kw *wkey[K, A]) {
	if ww.m.del(kw) {
		ww.c.keys.Store(int64(ww.m.n))
		// Kept for reuse, its slice of windows with it: a key whose last
		// window closes before its next item costs no allocation.
		*kw = wkey[K, A]{wins: kw.wins[:0]}
		ww.freeK = append(ww.freeK, kw)
	}
}

// newKey returns a record for key k of hash h, a dropped one if there
// is one.
func (ww *windowWorker[T, K, A]) newKey(k K, h uint64) *wkey[K, A] {
	n := len(ww.freeK)
	if n == 0 {
		return &wkey[K, A]{k: k, h: h}
	}
	kw := ww.freeK[n-1]
	ww.freeK[n-1] = nil
	ww.freeK = ww.freeK[:n-1]
	kw.k, kw.h = k, h
	return kw
}

func (ww *windowWorker[T, K, A]) alarm() <-chan time.Time {
	if ww.timer == nil || len(ww.dues) == 0 {
		return nil
	}
	ww.timer.Reset(time.Duration(max(0, ww.dues[0].at-time.Now().UnixNano())))
	return ww.timer.C
}

// tick: with processing time, the clock is the watermark.
func (ww *windowWorker[T, K, A]) tick(now time.Time) error {
	if ww.timer == nil {
		return nil
	}
	ww.now = now.UnixNano()
	return ww.advance(ww.now)
}

// end emits every open window when the input ran out; after a drain it
// leaves them, their inputs unsettled, to be computed again after a
// restart.
func (ww *windowWorker[T, K, A]) end(drained bool) error {
	if drained {
		ww.c.open.Store(0)
		ww.c.held.Store(0)
		ww.m.clear()
		ww.dues = nil
		ww.c.keys.Store(0)
		return nil
	}
	ww.wm = math.MaxInt64
	return ww.fireDue()
}

func (ww *windowWorker[T, K, A]) flush() bool {
	return ww.out.flush() && (ww.late == nil || ww.late.flush())
}
func (ww *windowWorker[T, K, A]) flushHeld(start, now int64) bool {
	return ww.out.flushHeld(start, now) && (ww.late == nil || ww.late.flushHeld(start, now))
}
