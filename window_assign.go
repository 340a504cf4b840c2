package sluice

import "math"

// How a Window worker puts an item into its windows: aligned (tumbling,
// hopping) or sessions, each within its lateness.

// aligned folds item v at ts into its tumbling or hopping windows that
// are not past their lateness; it returns how many.
func (ww *windowWorker[T, K, A]) aligned(sl *kslot[K, A], ts, wm int64, v *T) int {
	size, slide := ww.size, ww.slide
	if w := sl.last; w != nil && size == slide && ts >= w.start && ts < w.end {
		// Tumbling, in its key's newest window, as most items are: its
		// one window, found with no division and no search.
		if ww.past(sl, w.end, wm) {
			return 0
		}
		ww.fold(w, v)
		return 1
	}
	joined := 0
	for s := floorDiv(ts, slide) * slide; s > ts-size; s -= slide {
		end := satAdd(s, size)
		if ww.past(sl, end, wm) {
			break // and so is every earlier window
		}
		w := sl.last
		if w == nil || w.start != s { // start sits beside what fold touches
			if w = sl.kw.find(s); w == nil {
				w = ww.open(sl, s, end)
			}
		}
		ww.fold(w, v)
		joined++
	}
	return joined
}

// past reports whether the window of slot sl's key that ends at end is
// past its lateness by the watermark wm, or was emitted and dropped for
// the key (window_rejoin.go).
func (ww *windowWorker[T, K, A]) past(sl *kslot[K, A], end, wm int64) bool {
	return satAdd(end, ww.lateness) <= wm || end <= sl.done
}

// find returns the key's window that starts at s, or nil. It looks from
// the newest window.
func (kw *wkey[K, A]) find(s int64) *win[K, A] {
	for i := len(kw.wins) - 1; i >= 0; i-- {
		if w := kw.wins[i]; w.start == s {
			return w
		}
	}
	return nil
}

// open opens a window of the key of slot sl.
func (ww *windowWorker[T, K, A]) open(sl *kslot[K, A], start, end int64) *win[K, A] {
	kw := sl.kw
	var w *win[K, A]
	if n := len(ww.free); n > 0 {
		w = ww.free[n-1]
		ww.free[n-1] = nil
		ww.free = ww.free[:n-1]
	} else {
		w = new(win[K, A])
	}
	w.owner, w.start, w.end, w.alive = kw, start, end, true
	w.tr = ww.out.w.trace // the opening item's, when the pipeline traces
	kw.wins = append(kw.wins, w)
	sl.last = w
	ww.c.open.Add(1)
	ww.dues.push(due[K, A]{at: end, w: w, gen: w.gen})
	return w
}

// fold folds v into w and holds the item's receipts there.
func (ww *windowWorker[T, K, A]) fold(w *win[K, A], v *T) {
	ww.spec.Fold(&w.acc, *v)
	w.items++
	w.dirty = true
	if w.rev > 0 { // only an emitted window is emitted again at once
		ww.touched = append(ww.touched, w)
	}
	if len(ww.cur) > 0 {
		w.rs = append(w.rs, ww.cur...)
		ww.c.held.Add(int64(len(ww.cur)))
	}
}

// session folds v at ts into its session, merging the sessions it
// bridges; it returns 1, or 0 if the session is past its lateness.
func (ww *windowWorker[T, K, A]) session(sl *kslot[K, A], ts, wm int64, v *T) int {
	kw := sl.kw
	gap := int64(ww.spec.Windows.gap)
	start, end := ts, satAdd(ts, gap)
	if satAdd(end, ww.lateness) <= wm || ts < sl.done {
		return 0 // past its lateness, or in a session emitted and dropped
	}
	var into *win[K, A]
	var intoEnd int64 // into's end before this item
	keep := kw.wins[:0]
	for _, w := range kw.wins {
		if w.start >= end || ts >= w.end { // no overlap
			keep = append(keep, w)
			continue
		}
		if into == nil {
			into, intoEnd = w, w.end
			keep = append(keep, w)
			continue
		}
		// w joins into: the earlier start, the later end, both accumulators.
		ww.spec.Merge(&into.acc, &w.acc)
		into.start, into.end = min(into.start, w.start), max(into.end, w.end)
		into.items += w.items
		into.rs = append(into.rs, w.rs...)
		into.rev = max(into.rev, w.rev)
		into.dirty = into.dirty || w.dirty
		ww.c.open.Add(-1)
		ww.release(w)
	}
	kw.wins = keep
	if into == nil {
		into = ww.open(sl, start, end)
	} else {
		into.start, into.end = min(into.start, start), max(into.end, end)
		if into.end != intoEnd {
			ww.dues.push(due[K, A]{at: into.end, w: into, gen: into.gen})
		}
	}
	ww.fold(into, v)
	return 1
}

// lastEnd is the end of the latest window that an item at event time ts
// falls in.
func (w Windows) lastEnd(ts int64) int64 {
	if w.sessions() {
		return satAdd(ts, int64(w.gap))
	}
	return satAdd(floorDiv(ts, int64(w.slide))*int64(w.slide), int64(w.size))
}

// nextEnd is the end of the first aligned window that ends after wm.
func (w Windows) nextEnd(wm int64) int64 {
	sl, sz := int64(w.slide), int64(w.size)
	k := floorDiv(wm-sz, sl) + 1
	return satAdd(k*sl, sz)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// satAdd adds without wrapping past the largest int64.
func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
