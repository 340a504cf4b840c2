package sluice

// Partitions taken away from a Window stage's source while it runs
// (Revoker): the router stops counting them and drops their later items;
// the workers discard, unemitted, the windows that only they fed.

import "log/slog"

// revoke records that source to no longer reads partitions ids: called
// by the source (Revoker), from any goroutine.
func (ws *windowShared) revoke(to Settler, ids []uint64) {
	if len(ids) == 0 {
		return
	}
	ws.mu.Lock()
	for _, id := range ids {
		ws.gone[partKey{to, id}] = true
	}
	ws.mu.Unlock()
	ws.revokes.Add(1)
	if pp, ok := to.(Partitioned); ok {
		names := make([]string, len(ids))
		for i, id := range ids {
			names[i] = pp.PartitionName(id)
		}
		ws.p.logAt(slog.LevelInfo, "window partitions revoked: their windows are discarded, for their new reader to compute",
			slog.String("stage", ws.s.name), slog.Any("partitions", names))
	}
}

// goneView is a worker's copy of the partitions taken away, refreshed
// when the count of revokes changes.
type goneView struct {
	seen int64
	gone map[partKey]bool
}

// refresh brings v up to date; it reports whether any partition is gone.
func (v *goneView) refresh(ws *windowShared) bool {
	n := ws.revokes.Load()
	if n == 0 {
		return false
	}
	if n != v.seen {
		ws.mu.Lock()
		v.gone = make(map[partKey]bool, len(ws.gone))
		for k := range ws.gone {
			v.gone[k] = true
		}
		ws.mu.Unlock()
		v.seen = n
	}
	return true
}

// partKeyOf returns the partition of receipt r.
func partKeyOf(r Receipt) partKey {
	pk := partKey{to: r.t.to}
	if pp, ok := r.t.to.(Partitioned); ok {
		pk.id = pp.PartitionOf(r.t.key)
	}
	return pk
}

// onlyGone reports whether every receipt of rs (at least one) comes from
// a partition taken away.
func (v *goneView) onlyGone(rs []Receipt) bool {
	if len(rs) == 0 {
		return false
	}
	var last partKey
	for i, r := range rs {
		if i > 0 && r.t.to == last.to {
			if pp, ok := r.t.to.(Partitioned); !ok || pp.PartitionOf(r.t.key) == last.id {
				continue
			}
		}
		last = partKeyOf(r)
		if !v.gone[last] {
			return false
		}
	}
	return true
}

// discardRevoked discards window w, due to be emitted for the first time,
// if every input it holds came from partitions taken away: its receipts
// are dropped unsettled, since the partitions' new reader processes their
// messages again. It reports whether it did.
func (ww *windowWorker[T, K, A]) discardRevoked(w *win[K, A]) bool {
	if w.rev > 0 || !ww.revoked.refresh(ww.ws) || !ww.revoked.onlyGone(w.rs) {
		return false
	}
	ww.c.held.Add(-int64(len(w.rs)))
	var last Settler
	var h *heldCount
	for _, r := range w.rs {
		if r.t.to != last {
			last, h = r.t.to, ww.ws.heldFor(r.t.to)
		}
		h.n.Add(-1)
	}
	w.rs = nil
	w.dirty = false
	ww.ws.revoked.Add(1)
	ww.drop(w)
	return true
}

// watchRevokes registers the stage with source to if it reports
// revoked partitions, once per source.
func (r *windowRouter[T, K, A]) watchRevokes(to Settler) {
	rv, ok := to.(Revoker)
	if !ok || r.revokers[to] {
		return
	}
	if r.revokers == nil {
		r.revokers = make(map[Settler]bool)
	}
	r.revokers[to] = true
	ws := r.ws
	stop := rv.OnRevoke(func(ids []uint64) { ws.revoke(to, ids) })
	ws.p.onFinish(stop)
}

// syncRevoked removes the partitions taken away from the watermark.
func (r *windowRouter[T, K, A]) syncRevoked() {
	n := r.ws.revokes.Load()
	if n == r.revSeen {
		return
	}
	r.revSeen = n
	r.ws.mu.Lock()
	r.removeParts(func(pt *part) bool { return r.ws.gone[partKey{pt.settler, pt.id}] })
	r.ws.mu.Unlock()
	r.recompute()
}

// isGone reports whether partition pk was taken away.
func (r *windowRouter[T, K, A]) isGone(pk partKey) bool {
	if r.ws.revokes.Load() == 0 {
		return false
	}
	r.ws.mu.Lock()
	defer r.ws.mu.Unlock()
	return r.ws.gone[pk]
}

// removeParts removes the partitions for which drop is true.
func (r *windowRouter[T, K, A]) removeParts(drop func(pt *part) bool) {
	keep := r.list[:0]
	for _, pt := range r.list {
		if !drop(pt) {
			keep = append(keep, pt)
			continue
		}
		delete(r.parts, partKey{pt.settler, pt.id})
		if pt.idle {
			r.ws.idleNow.Add(-1)
		}
		if r.last == pt {
			r.last = nil
		}
		if r.minP == pt {
			r.minP = nil
		}
	}
	clear(r.list[len(keep):])
	r.list = keep
	r.ws.parts.Store(int64(len(r.list)))
}

// setWM sets the watermark: the least of the active partitions', which
// goes back when a partition joins behind the others.
func (r *windowRouter[T, K, A]) setWM(wm int64) {
	if wm != r.wm {
		r.wm = wm
		r.hw = max(r.hw, wm)
	}
}

// dropRevoked drops an item of a partition taken away, counted: its
// receipts are left unsettled, since settling them does nothing (the
// Revoker's contract) and the partition's new reader processes the
// message again. It returns true: the router goes on.
func (r *windowRouter[T, K, A]) dropRevoked() bool {
	r.ws.revokedItems.Add(1)
	return true
}

// procRevoked reports whether item v, under processing time, comes from
// a partition taken away, and if so drops it (dropRevoked). It registers
// the stage with each source that reports revokes, as partOf does under
// event time; until a revoke it costs a receipt walk and a comparison.
func (r *windowRouter[T, K, A]) procRevoked(v *T) bool {
	r.cur = Receipt{}
	r.rc(v, settleOp{visit: r.visit})
	t := r.cur.t
	if t == nil {
		return false
	}
	if t.to != r.procTo {
		r.procTo = t.to
		r.watchRevokes(t.to)
	}
	if !r.procGone.refresh(r.ws) {
		return false
	}
	pk := partKey{to: t.to}
	if pp, ok := t.to.(Partitioned); ok {
		pk.id = pp.PartitionOf(t.key)
	}
	if !r.procGone.gone[pk] {
		return false
	}
	return r.dropRevoked()
}
