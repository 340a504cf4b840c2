package sluice

// The router of a Window stage: it reads each item's event time, keeps
// the watermark of each source partition and their least, sends late
// items to the late stream and marks the watermark to every worker.

import (
	"log/slog"
	"math"
	"time"
)

// part is one source partition as a Window stage's router sees it.
type part struct {
	name    string
	max     int64 // largest event time seen; math.MinInt64 before any
	seen    int64 // when it last sent an item (router clock, nowNs)
	sent    bool  // it sent an item in the chunk at hand: seen is set at its end
	idle    bool
	warned  bool // its hold on the watermark was logged
	settler Settler
	id      uint64
}

type partKey struct {
	to Settler
	id uint64
}

// windowRouter routes a Window stage's items and keeps its watermark.
type windowRouter[T any, K comparable, A any] struct {
	ws   *windowShared
	hash keyHash[K]
	key  func(T) K
	time func(T) time.Time
	rc   receipts[T]
	late *sender[Late[T]]
	// one is the stage's one worker when it runs on this goroutine
	// (inline): each item goes to it at once, with its key.
	one *windowWorker[T, K, A]

	parts  map[partKey]*part
	list   []*part
	last   *part // the partition of the previous item
	lastK  partKey
	minP   *part // the partition that holds the watermark back; nil: none
	wm     int64 // the watermark
	hw     int64 // the highest the watermark has been
	marked int64 // the watermark of the last marker sent
	pub    int64 // the watermark last published to Stats (ws.wm)
	next   int64 // aligned windows: the next window end a marker is due at
	now    int64 // the router's clock, read per chunk
	timer  *time.Timer
	cur    Receipt
	visit  func(Receipt)
	stall  int64 // Idle == 0: how long a silent partition holds the watermark before it is logged
	// The sources that list their partitions, and when they were last
	// asked.
	listers map[Settler]PartitionLister
	listed  int64
	// The sources that report revoked partitions, and the count of
	// revokes seen; processing time: the source of the previous item
	// and the partitions taken away (window_revoke.go).
	revokers map[Settler]bool
	revSeen  int64
	procTo   Settler
	procGone goneView
}

func (r *windowRouter[T, K, A]) init() {
	r.parts = make(map[partKey]*part)
	r.listers = make(map[Settler]PartitionLister)
	r.wm, r.hw, r.marked, r.next, r.pub = math.MinInt64, math.MinInt64, math.MinInt64, math.MinInt64, math.MinInt64
	r.visit = func(x Receipt) {
		if r.cur.t == nil {
			r.cur = x
		}
	}
	r.timer = time.NewTimer(time.Hour)
	r.timer.Stop()
	r.stall = int64(10 * time.Second)
	if sz := int64(r.ws.win.size + r.ws.win.gap); 4*sz > r.stall {
		r.stall = 4 * sz
	}
	r.now = nowNs()
}

// partOf returns the partition of item v; nil for a partition taken
// away (Revoker).
func (r *windowRouter[T, K, A]) partOf(v *T) *part {
	var pk partKey
	if r.rc != nil {
		r.cur = Receipt{}
		r.rc(v, settleOp{visit: r.visit})
		if t := r.cur.t; t != nil {
			pk.to = t.to
			if pp, ok := t.to.(Partitioned); ok {
				pk.id = pp.PartitionOf(t.key)
			}
		}
	}
	if r.last != nil && pk == r.lastK {
		return r.last
	}
	pt := r.parts[pk]
	if pt == nil {
		if r.isGone(pk) {
			return nil
		}
		pt = r.newPart(pk)
		if pt = r.parts[pk]; pt == nil { // listed as gone already: keep it while it sends
			pt = r.newPart(pk)
		}
	}
	r.last, r.lastK = pt, pk
	return pt
}

func (r *windowRouter[T, K, A]) routeChunk(kc routeTo[T], c *chunk[T]) bool {
	return routeItems(kc, c, r.route)
}

func (r *windowRouter[T, K, A]) route(kc routeTo[T], v *T) bool {
	k := r.key(*v)
	h := r.hash.of(k)
	if r.time == nil { // processing time: the worker stamps it
		if r.rc != nil && r.procRevoked(v) {
			return true
		}
		return kc.to(h, kmsg[T]{v: *v})
	}
	ts := r.time(*v).UnixNano()
	pt := r.last
	if r.rc != nil || pt == nil { // with no receipts, one partition: the last
		if pt = r.partOf(v); pt == nil {
			return r.dropRevoked()
		}
	}
	pt.sent = true
	woke := false
	if pt.idle {
		pt.idle, woke = false, true
		r.ws.idleNow.Add(-1)
		r.ws.p.logAt(slog.LevelInfo, "window partition active again", slog.String("stage", r.ws.s.name), slog.String("partition", pt.name))
	}
	grew := ts > pt.max
	if grew {
		pt.max = ts
	}
	switch {
	case len(r.list) == 1:
		if grew {
			r.setWM(satSub(ts, r.ws.ooo))
		}
	case woke || (grew && (r.minP == nil || r.minP == pt)):
		r.recompute()
	}
	// Lateness is judged against the item's own partition's watermark: a
	// partition read behind the others (a backlog taken over) is not late,
	// and holds the watermark back while it catches up. A partition ahead
	// of the others is judged as leniently as the stage's highest
	// watermark: its item is late only once its window could have been
	// emitted. Before the stage has a watermark (a partition listed has
	// neither spoken nor idled yet), the item's own partition judges it.
	lw := satSub(pt.max, r.ws.ooo)
	if r.hw != math.MinInt64 {
		lw = min(lw, r.hw)
	}
	// Every window of an item ends at or after its event time, so an item
	// after lw − Lateness is on time without working out its windows: the
	// common case, which spares a division.
	if satAdd(ts, r.ws.lateness) <= lw && satAdd(r.ws.win.lastEnd(ts), r.ws.lateness) <= lw {
		return r.toLate(v, ts, lw)
	}
	if r.one != nil {
		if kc.p.halted() {
			return false
		}
		if err := r.one.item(h, k, v, ts, r.wm, lw); err != nil {
			kc.err = err
			return false
		}
		return true
	}
	m := kc.put(h)
	if m == nil {
		return false
	}
	m.v, m.ts, m.wm, m.lw = *v, ts, r.wm, lw
	return true
}

// toLate hands on an item too late for all its windows by its
// partition's watermark lw.
func (r *windowRouter[T, K, A]) toLate(v *T, ts, lw int64) bool {
	if r.late == nil {
		r.ws.dropped.Add(1)
		if r.rc != nil {
			r.rc(v, ack)
		}
		if r.ws.loggedDrop.CompareAndSwap(false, true) {
			r.ws.p.logAt(slog.LevelWarn, "late items dropped: set WindowSpec.Late to keep them", slog.String("stage", r.ws.s.name),
				slog.Time("event_time", time.Unix(0, ts)), slog.Time("watermark", time.Unix(0, lw)))
		}
		return true
	}
	r.ws.late.Add(1)
	r.late.stamp()
	return r.late.send(Late[T]{Item: *v, Time: time.Unix(0, ts).UTC(), Watermark: time.Unix(0, lw).UTC()})
}

// recompute sets the watermark from the partitions: the least of the
// active ones' (none while one that has sent nothing is active), or the
// largest when every one is idle. It goes back when a partition joins
// behind the others.
func (r *windowRouter[T, K, A]) recompute() {
	var lo, hi int64 = math.MaxInt64, math.MinInt64
	var minP *part
	active := false
	for _, pt := range r.list {
		hi = max(hi, pt.max)
		if pt.idle {
			continue
		}
		active = true
		if pt.max < lo {
			lo, minP = pt.max, pt
		}
	}
	r.minP = minP
	switch {
	case active:
		r.setWM(satSub(lo, r.ws.ooo))
	case hi != math.MinInt64:
		r.setWM(satSub(hi, r.ws.ooo))
	}
}

func satSub(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

// chunkDone reads the clock, sets idle partitions aside, and sends a
// watermark marker to every worker when the watermark passed a window's
// end (any advance, for sessions).
func (r *windowRouter[T, K, A]) chunkDone(kc routeTo[T]) bool {
	if r.time == nil {
		return true
	}
	r.now = nowNs()
	for _, pt := range r.list {
		if pt.sent {
			pt.seen, pt.sent = r.now, false
		}
	}
	r.syncRevoked()
	r.relist()
	r.checkIdle()
	return r.mark(kc) && r.flush()
}

func (r *windowRouter[T, K, A]) mark(kc routeTo[T]) bool {
	if r.wm != r.pub { // Stats' figure: once a chunk, not an atomic store per item
		r.pub = r.wm
		r.ws.wm.Store(r.wm)
	}
	if r.wm == r.marked {
		return true
	}
	if r.wm < r.marked {
		// It went back: the workers learn it from the items, which carry
		// it; the next marker is due at the first end past it.
		r.marked = r.wm
		if !r.ws.win.sessions() && r.wm != math.MinInt64 {
			r.next = r.ws.win.nextEnd(r.wm)
		} else {
			r.next = math.MinInt64
		}
		return true
	}
	if !r.ws.win.sessions() && r.wm < r.next {
		return true
	}
	r.marked = r.wm
	if !r.ws.win.sessions() {
		r.next = r.ws.win.nextEnd(r.wm)
	}
	return kc.toAll(kmsg[T]{ctl: true, wm: r.wm})
}

func (r *windowRouter[T, K, A]) flush() bool { return r.late == nil || r.late.flush() }

func (r *windowRouter[T, K, A]) ring(kc routeTo[T]) bool {
	r.now = nowNs()
	r.syncRevoked()
	r.relist()
	r.checkIdle()
	return r.mark(kc)
}
