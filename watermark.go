package sluice

import (
	"fmt"
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

// Revoker is implemented by a [Partitioned] Settler whose partitions can
// be taken away while it runs, for another reader to process their
// unsettled messages again (kafkax: a consumer group's rebalance moves a
// partition to another member). A [Window] stage registers with OnRevoke
// when it first sees the Settler, and unregisters when its pipeline ends.
//
// Told of a revoke, the stage discards, unemitted, every window whose
// inputs held since its last emission all came from partitions taken
// away: the new reader gets those messages again and computes the window
// again, whole. It drops their receipts without settling them (settling
// does nothing now, and an acknowledgement would claim them processed),
// and drops the items of those partitions that it takes in after it
// learnt of the revoke (from its next input chunk on), counted in
// [WindowStats].RevokedItems, their receipts unsettled too. A window fed
// by partitions still read here too is emitted as usual (see [Window]);
// an update of a window emitted already (lateness) is emitted as usual.
// Processing-time windows do the same: their results depend on arrival
// anyway, and a window discarded here has its messages folded by the new
// reader, by its clock, rather than counted twice.
type Revoker interface {
	// OnRevoke registers f and returns a function that unregisters it.
	// The Settler calls f with the partitions taken away before another
	// reader can read them; f does not block. Once f is called, settling
	// a message of those partitions does nothing, and their ids are not
	// used again.
	OnRevoke(f func(ids []uint64)) (stop func())
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
	// Partitions taken away (Revoker): revokes counts the calls, gone
	// (under mu) holds them; revoked counts the windows discarded,
	// revokedItems the items dropped on their way in.
	revokes, revoked, revokedItems atomic.Int64

	mu   sync.Mutex
	held map[Settler]*heldCount
	gone map[partKey]bool

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
	ws := &windowShared{p: p, s: s, win: w, ooo: int64(ooo), lateness: int64(lateness), idle: int64(idle), held: make(map[Settler]*heldCount), gone: make(map[partKey]bool)}
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
	st.Revoked, st.RevokedItems = ws.revoked.Load(), ws.revokedItems.Load()
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
