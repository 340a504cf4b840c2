package sluice

import (
	"fmt"
	"hash/maphash"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Partitioned is implemented by a [Settler] whose messages come from
// several partitions, each in order (a Kafka topic's partitions): a
// [Window] stage keeps a watermark per partition and combines them as
// their minimum, so that one partition running ahead does not make
// another's items late. A Settler that does not implement it is one
// partition.
type Partitioned interface {
	// PartitionOf returns the partition of the message of receipt key
	// key, as an id of the Settler's choosing. Called for every item
	// that reaches a Window stage: keep it cheap.
	PartitionOf(key uint64) uint64
	// PartitionName names partition id in logs ("orders[3]").
	PartitionName(id uint64) string
}

// PartitionLister is implemented by a [Partitioned] Settler that knows
// which partitions it reads now (kafkax: the partitions assigned to this
// member). A [Window] stage asks when it first sees the Settler and then
// every 100 ms: a partition that has sent nothing yet holds the
// watermark back (so that the first partition read does not make the
// others' items late; an empty partition needs [WindowSpec].Idle), and
// one that is gone (revoked) stops holding it.
type PartitionLister interface {
	Partitions() []uint64
}

// Parker is implemented by a [Settler] that bounds the messages it has
// handed out and not seen settled (kafkax's MaxInFlight), and that can
// set aside those held by a [Window] stage: Park says that the message
// of receipt key key is held by a window, which settles it only once
// the window is emitted and stored, so it should no longer count against
// the bound. It is settled as usual later. Park is called at most once
// per message and window stage, from any goroutine.
type Parker interface {
	Park(key uint64)
}

// InFlightBounded is implemented by a [Settler] whose source stops
// handing out messages when a number of them are unsettled and that
// cannot set held ones aside (natsx: the server's MaxAckPending). A
// [Window] stage that holds that many of its messages fails the pipeline
// with an error naming setting, rather than stalling: no more input could
// arrive, so no window could close.
type InFlightBounded interface {
	InFlightBound() (n int, setting string)
}

// windowShared is what a Window stage's router and workers share: the
// windows' settings, the counters its Stats report, and the count of
// receipts held per source.
type windowShared struct {
	p        *Pipeline
	s        *stage
	win      Windows
	ooo      int64
	lateness int64
	idle     int64
	// The router's watermark (math.MinInt64 before any item), its
	// partitions and idle ones, for Stats.
	wm             atomic.Int64
	parts, idleNow atomic.Int64
	late, dropped  atomic.Int64
	loggedDrop     atomic.Bool

	mu   sync.Mutex
	held map[Settler]*heldCount

	counters []*windowCounters // one per worker, registered before they start
}

// heldCount is the receipts one source's messages hold in a window
// stage's windows.
type heldCount struct {
	n       atomic.Int64
	park    Parker
	bound   int64 // InFlightBounded's n × windows per item; 0: none
	setting string
}

func newWindowShared(p *Pipeline, s *stage, w Windows, ooo, lateness, idle time.Duration) *windowShared {
	ws := &windowShared{p: p, s: s, win: w, ooo: int64(ooo), lateness: int64(lateness), idle: int64(idle), held: make(map[Settler]*heldCount)}
	ws.wm.Store(math.MinInt64)
	return ws
}

// heldFor returns the count of source to's held receipts.
func (ws *windowShared) heldFor(to Settler) *heldCount {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	h := ws.held[to]
	if h == nil {
		h = new(heldCount)
		h.park, _ = to.(Parker)
		if b, ok := to.(InFlightBounded); ok && h.park == nil {
			n, setting := b.InFlightBound()
			per := int64(1)
			if !ws.win.sessions() {
				per = (int64(ws.win.size) + int64(ws.win.slide) - 1) / int64(ws.win.slide)
			}
			h.bound, h.setting = int64(n)*per, setting
		}
		ws.held[to] = h
	}
	return h
}

// hold counts k more holds of a source's message; it fails the pipeline
// when the windows hold the source's whole in-flight bound.
func (ws *windowShared) hold(h *heldCount, r Receipt, k int) {
	if h.park != nil {
		h.park.Park(r.t.key)
	}
	if n := h.n.Add(int64(k)); h.bound > 0 && n >= h.bound {
		ws.p.fail(&StageError{Stage: ws.s.name, Err: fmt.Errorf(
			"%v windows hold %d unsettled messages of one source, its whole in-flight bound (%s): it can hand out no more, so no window could close; "+
				"raise %s above the input rate × (window size + OutOfOrder + Lateness), or use shorter windows",
			ws.win, n, h.setting, h.setting)})
	}
}

// stats is the stage's WindowStats, its workers' figures summed.
func (ws *windowShared) stats() WindowStats {
	var st WindowStats
	if wm := ws.wm.Load(); wm != math.MinInt64 {
		st.Watermark = time.Unix(0, wm).UTC()
		st.Lag = time.Since(st.Watermark)
	}
	st.Partitions, st.IdlePartitions = int(ws.parts.Load()), int(ws.idleNow.Load())
	st.Late, st.LateDropped = ws.late.Load(), ws.dropped.Load()
	for _, c := range ws.counters {
		st.Open += c.open.Load()
		st.Held += c.held.Load()
		st.Emitted += c.emitted.Load()
		st.Updated += c.updated.Load()
	}
	return st
}

// windowCounters are one worker's figures.
type windowCounters struct {
	open, held, emitted, updated, keys atomic.Int64
}

// part is one source partition as a Window stage's router sees it.
type part struct {
	name    string
	max     int64 // largest event time seen; math.MinInt64 before any
	seen    int64 // when it last sent an item (router clock, nowNs)
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
type windowRouter[T any, K comparable] struct {
	ws   *windowShared
	seed maphash.Seed
	key  func(T) K
	time func(T) time.Time
	rc   receipts[T]
	late *sender[Late[T]]

	parts  map[partKey]*part
	list   []*part
	last   *part // the partition of the previous item
	lastK  partKey
	minP   *part // the partition that holds the watermark back; nil: none
	wm     int64 // the watermark
	marked int64 // the watermark of the last marker sent
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
}

// listEvery is how often a Window's router asks a PartitionLister.
const listEvery = int64(100 * time.Millisecond)

// newPart adds partition pk to the watermark.
func (r *windowRouter[T, K]) newPart(pk partKey) *part {
	pt := &part{max: math.MinInt64, seen: r.now, settler: pk.to, id: pk.id}
	switch pp, ok := pk.to.(Partitioned); {
	case ok:
		pt.name = pp.PartitionName(pk.id)
	case pk.to != nil:
		pt.name = fmt.Sprintf("%T", pk.to)
	default:
		pt.name = "input"
	}
	r.parts[pk] = pt
	r.list = append(r.list, pt)
	r.ws.parts.Store(int64(len(r.list)))
	r.minP = nil
	if pl, ok := pk.to.(PartitionLister); ok && r.listers[pk.to] == nil {
		r.listers[pk.to] = pl
		r.list0(pk.to, pl)
	}
	return pt
}

// list0 makes the partitions of source to those pl lists now: new ones
// hold the watermark until they send, gone ones no longer do.
func (r *windowRouter[T, K]) list0(to Settler, pl PartitionLister) {
	ids := pl.Partitions()
	now := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		now[id] = true
		if r.parts[partKey{to, id}] == nil {
			r.newPart(partKey{to, id})
		}
	}
	keep := r.list[:0]
	for _, pt := range r.list {
		if pt.settler == to && !now[pt.id] && len(ids) > 0 {
			delete(r.parts, partKey{pt.settler, pt.id})
			if pt.idle {
				r.ws.idleNow.Add(-1)
			}
			if r.last == pt {
				r.last = nil
			}
			continue
		}
		keep = append(keep, pt)
	}
	clear(r.list[len(keep):])
	r.list = keep
	r.ws.parts.Store(int64(len(r.list)))
	r.recompute()
}

// relist asks the sources that list their partitions again, every
// listEvery.
func (r *windowRouter[T, K]) relist() {
	if len(r.listers) == 0 || r.now-r.listed < listEvery {
		return
	}
	r.listed = r.now
	for to, pl := range r.listers {
		r.list0(to, pl)
	}
}

func (r *windowRouter[T, K]) init() {
	r.parts = make(map[partKey]*part)
	r.listers = make(map[Settler]PartitionLister)
	r.wm, r.marked, r.next = math.MinInt64, math.MinInt64, math.MinInt64
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

// partOf returns the partition of item v.
func (r *windowRouter[T, K]) partOf(v *T) *part {
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
		pt = r.newPart(pk)
		if pt = r.parts[pk]; pt == nil { // listed as gone already: keep it while it sends
			pt = r.newPart(pk)
		}
	}
	r.last, r.lastK = pt, pk
	return pt
}

func (r *windowRouter[T, K]) route(kc routeTo[T], v *T) bool {
	h := maphash.Comparable(r.seed, r.key(*v))
	if r.time == nil { // processing time: the worker stamps it
		return kc.to(h, kmsg[T]{v: *v})
	}
	ts := r.time(*v).UnixNano()
	pt := r.partOf(v)
	pt.seen = r.now
	if pt.idle {
		pt.idle = false
		r.ws.idleNow.Add(-1)
		r.ws.p.logAt(slog.LevelInfo, "window partition active again", slog.String("stage", r.ws.s.name), slog.String("partition", pt.name))
	}
	if ts > pt.max {
		pt.max = ts
		if len(r.list) == 1 {
			r.advance(satSub(ts, r.ws.ooo))
		} else if r.minP == nil || r.minP == pt {
			r.recompute()
		}
	}
	if satAdd(r.ws.win.lastEnd(ts), r.ws.lateness) <= r.wm {
		return r.toLate(v, ts)
	}
	return kc.to(h, kmsg[T]{v: *v, ts: ts, wm: r.wm})
}

// toLate hands on an item too late for all its windows.
func (r *windowRouter[T, K]) toLate(v *T, ts int64) bool {
	if r.late == nil {
		r.ws.dropped.Add(1)
		if r.rc != nil {
			r.rc(v, ack)
		}
		if r.ws.loggedDrop.CompareAndSwap(false, true) {
			r.ws.p.logAt(slog.LevelWarn, "late items dropped: set WindowSpec.Late to keep them", slog.String("stage", r.ws.s.name),
				slog.Time("event_time", time.Unix(0, ts)), slog.Time("watermark", time.Unix(0, r.wm)))
		}
		return true
	}
	r.ws.late.Add(1)
	return r.late.send(Late[T]{Item: *v, Time: time.Unix(0, ts).UTC(), Watermark: time.Unix(0, r.wm).UTC()})
}

// advance moves the watermark to wm if that is later.
func (r *windowRouter[T, K]) advance(wm int64) {
	if wm > r.wm {
		r.wm = wm
		r.ws.wm.Store(wm)
	}
}

// recompute sets the watermark from the partitions: the least of the
// active ones', or the largest when every one is idle.
func (r *windowRouter[T, K]) recompute() {
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
	case active && lo != math.MinInt64:
		r.advance(satSub(lo, r.ws.ooo))
	case !active && hi != math.MinInt64:
		r.advance(satSub(hi, r.ws.ooo))
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
func (r *windowRouter[T, K]) chunkDone(kc routeTo[T]) bool {
	if r.time == nil {
		return true
	}
	r.now = nowNs()
	r.relist()
	r.checkIdle()
	return r.mark(kc) && r.flush()
}

func (r *windowRouter[T, K]) mark(kc routeTo[T]) bool {
	if r.wm <= r.marked {
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

// checkIdle sets aside the partitions silent for Idle, or, with no Idle,
// logs once a partition that holds the watermark back for long.
func (r *windowRouter[T, K]) checkIdle() {
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
func (r *windowRouter[T, K]) alarm() <-chan time.Time {
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

func (r *windowRouter[T, K]) flush() bool { return r.late == nil || r.late.flush() }

func (r *windowRouter[T, K]) ring(kc routeTo[T]) bool {
	r.now = nowNs()
	r.relist()
	r.checkIdle()
	return r.mark(kc)
}
