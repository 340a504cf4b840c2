package sluice

import (
	"fmt"
	"reflect"
	"time"
)

// Windows is how a [Window] stage cuts time into windows: [Tumbling],
// [Hopping] or [Sessions]. Windows are aligned to the Unix epoch: a
// one-second tumbling window starts on a whole second.
type Windows struct {
	size, slide, gap time.Duration
	show             string
}

// Tumbling returns windows of the given size, back to back: each item is
// in exactly one. A Window stage given a size ≤ 0 panics.
func Tumbling(size time.Duration) Windows {
	return Windows{size: size, slide: size, show: fmt.Sprintf("Tumbling(%v)", size)}
}

// Hopping returns windows of the given size that start every slide: each
// item is in about size/slide of them (one when slide == size, as
// [Tumbling]). A Window stage panics unless 0 < slide ≤ size.
func Hopping(size, slide time.Duration) Windows {
	return Windows{size: size, slide: slide, show: fmt.Sprintf("Hopping(%v, %v)", size, slide)}
}

// Sessions returns session windows: a key's session lasts while its items
// come less than gap apart (by event time), and ends gap after its last
// item. An item that bridges two sessions merges them ([WindowSpec].Merge
// is then required). A Window stage given a gap ≤ 0 panics.
func Sessions(gap time.Duration) Windows {
	return Windows{gap: gap, show: fmt.Sprintf("Sessions(%v)", gap)}
}

func (w Windows) String() string { return w.show }

// sessions reports whether w are session windows.
func (w Windows) sessions() bool { return w.gap > 0 || (w.size == 0 && w.slide == 0) }

// WindowSpec says what a [Window] stage computes: items of type T,
// grouped by a key of type K, folded into an accumulator of type A per
// window. Windows and Fold are required.
type WindowSpec[T any, K comparable, A any] struct {
	// Windows cuts time into windows: [Tumbling], [Hopping], [Sessions].
	Windows Windows
	// Key returns an item's key; nil puts every item under one key (the
	// zero K). Called by the stage's router for every item.
	Key func(v T) K
	// Time returns an item's event time. Nil means processing time: an
	// item's time is when a worker takes it, the watermark is the wall
	// clock, and a window closes when the clock passes its end (no item
	// is ever late).
	Time func(v T) time.Time
	// Fold folds an item into a window's accumulator, which starts as the
	// zero A. With [Hopping] windows an item is folded into each window
	// it falls in.
	Fold func(acc *A, v T)
	// Merge merges the accumulator from into into, when an item joins two
	// sessions ([Sessions] only, where it is required).
	Merge func(into *A, from *A)
	// OutOfOrder is how far behind the latest event time seen an item may
	// come and still be on time: the watermark is the largest event time
	// seen (per source partition) minus OutOfOrder. A window is emitted
	// once the watermark passes its end, so OutOfOrder is also the delay
	// between the end of a window and its emission.
	OutOfOrder time.Duration
	// Lateness is how long after its emission a window is kept: a late
	// item (see [Window]: judged against its own partition's watermark)
	// less than Lateness behind its window's end updates the window,
	// which is emitted again with the next Revision. An item later than
	// that goes to Late.
	Lateness time.Duration
	// Idle, if > 0, is how long a source partition may send nothing
	// before the watermark stops waiting for it (counted from its last
	// item, or from when the stage learnt of it: a partition listed
	// but silent at the start holds the watermark for Idle at most); it
	// rejoins when it sends again, judged against its own watermark. With
	// Idle == 0 a silent partition holds the watermark back until the end
	// of the input (the stage logs it once). If every partition is idle
	// the watermark is the largest of theirs: it does not follow the
	// wall clock, so the window of the newest event stays open until an
	// item moves the watermark on, or the input ends.
	Idle time.Duration
	// Late, if set, is filled with a stream of the items that came after
	// their every window's Lateness: its consumer settles them. If nil,
	// such items are acknowledged and counted (WindowStats.LateDropped),
	// and the first is logged: never dropped silently.
	Late *Stream[Late[T]]
}

// Pane is one emission of a window: the accumulator of the items of one
// key whose event time falls in [Start, End). Acc is a copy of the
// window's accumulator: an A that holds a map or a pointer shares it with
// the window while the window is kept for lateness.
//
// A Pane carries a [Receipt] that settles the inputs folded into it since
// the window's previous emission: a sink that stores the Pane and settles
// it (as [ForEach] does) settles them, so a message is acknowledged only
// once every window it went into is stored. A window updated by late
// items is emitted again with the next Revision and the whole
// accumulator. A store keyed by (Key, Start) should keep the row with the
// most Items, not the highest Revision: a replay that starts in the
// middle of a window (its first items were stored and settled, its late
// ones not) computes it again from fewer items, as Revision 0.
type Pane[K comparable, A any] struct {
	Receipt
	Key        K
	Start, End time.Time
	Acc        A
	Items      int // items folded into Acc, over every revision
	// Revision is 0 for the first emission and k for the k-th update by
	// late items. A [Sessions] update may have a later End, or an earlier
	// Start when it merged an earlier session.
	Revision int
}

// Late is an item that came too late for every window it falls in: its
// event time, and the watermark that judged it (see [Window]) when it
// arrived — for an item of a partition behind whose windows its key had
// emitted and dropped already, the watermark that dropped the last of
// them. It carries the item's receipts, settled by whoever stores it.
type Late[T any] struct {
	Item      T
	Time      time.Time
	Watermark time.Time
}

// settleAll applies op to the late item's receipts.
func (l *Late[T]) settleAll(op settleOp) {
	if w := walkerOf(reflect.TypeFor[T]()); w != nil {
		w(reflect.ValueOf(&l.Item).Elem(), op)
	}
}

// WindowStats describes a [Window] stage at a snapshot.
type WindowStats struct {
	// Watermark is the stage's watermark as of the last input chunk its
	// router finished (zero before the first); Lag is how far it is
	// behind the wall clock at the snapshot.
	Watermark time.Time
	Lag       time.Duration
	// Partitions is the source partitions seen, IdlePartitions those set
	// aside for being idle longer than [WindowSpec].Idle.
	Partitions, IdlePartitions int
	// Open is the windows held: not emitted yet, or kept for lateness.
	Open int64
	// Held is the receipts the open windows hold, not yet handed on in a
	// Pane.
	Held int64
	// Emitted is the panes handed on, Updated those of them that are
	// updates (Revision > 0).
	Emitted, Updated int64
	// Late is the items beyond lateness sent to the late stream;
	// LateDropped those acknowledged because no late stream was set.
	Late, LateDropped int64
	// Revoked is the windows discarded unemitted because every input
	// they held came from partitions taken away ([Revoker]);
	// RevokedItems the items of such partitions that reached the stage
	// after it learnt of the revoke: dropped, their receipts left
	// unsettled, for the partitions' new reader to process.
	Revoked, RevokedItems int64
}

// Window starts a stage that groups the items of in by key and by time
// into windows, folds each window's items into an accumulator, and emits
// a [Pane] per window once the watermark passes its end. n workers own
// the keys, as in [Keyed]; a router (one goroutine) reads each item's
// event time, keeps the watermark and routes the item. With n == 1 and
// event time (spec.Time set) the router folds the items itself: the
// stage runs one goroutine (StageStats.Workers is 1).
//
// Event time and the watermark: a partition's watermark is the largest
// event time seen from it minus spec.OutOfOrder — per source partition,
// the partition of an item's [Receipt] when its connector's [Settler]
// implements [Partitioned] (kafkax: per Kafka partition). The stage's
// watermark, which emits windows, is their minimum over the partitions
// not idle (see spec.Idle); it goes back when a partition joins behind
// the others (newly assigned, or active again), and windows not yet
// emitted then wait for it. An item is late when its window ended before
// the lower of its own partition's watermark and the highest the stage's
// has been (its partition's alone while the stage has none): within spec.Lateness of its window's end it updates the
// window (re-emitted with the next Revision), beyond it it goes to
// spec.Late. So a partition read behind the others — a backlog taken
// over from a member that left — is not late, and a partition ahead of
// the others is not judged more strictly than by the stage's watermark.
// A window is never emitted twice as Revision 0: an item of a partition
// behind that falls in a window emitted already updates it while it is
// kept (emitted as the next Revision once the watermark passes its end
// again), and is late once its key's window was dropped (remembered per
// key while the key has a window open). Lateness is decided
// by the router as of that item, so with one partition the windows'
// contents are a function of the input alone, the same for every n and
// every run.
//
// Partitions taken away: when the source's Settler implements [Revoker]
// (kafkax), a window whose inputs all came from partitions taken away is
// discarded, not emitted, and its receipts dropped unsettled: the new
// reader of those partitions computes it again. Their items that arrive
// later are dropped, unsettled, and counted (WindowStats.RevokedItems).
// A window fed by partitions still read here too is emitted with what it
// holds. The same holds under processing time.
//
// Settling: an input is settled only once every window it went into has
// been emitted and its Pane settled (stored). A window holds one pointer
// per input (8 bytes; the receipt itself is the connector's). A source
// whose Settler implements [Parker] (kafkax) stops counting the messages
// a window holds against its in-flight bound, so a window may hold more
// than MaxInFlight; one that does not (natsx, bounded by the server's
// MaxAckPending) is watched: when the windows hold the source's whole
// bound ([InFlightBounded]) no more input can arrive and no window could
// close, and the pipeline fails with an error naming the setting instead
// of stalling.
//
// End of input: when the input ends by running out, every open window is
// emitted. When it ends by a [Pipeline.Drain], open windows are not
// emitted and their inputs are not settled: the broker delivers them
// again after a restart, and the windows are computed again, whole.
//
// Memory: O(keys × open windows): an accumulator, a window record (about
// 100 bytes) and 8 bytes per input held, and about 150 bytes per key.
// Cost: the router's call of spec.Time and spec.Key and a hash per item;
// then a lookup of the key's windows by that hash and spec.Fold per
// window per item (on a worker, which calls spec.Key again, when n > 1
// or by processing time): with a cheap Fold, about 95 ns of CPU per
// item with one worker by event time, about 120 ns with two
// (BenchmarkWindowCheapVsLoop). Stats: StageStats.Keys and
// StageStats.Window. It takes the output options ([Buffer], [Chunk],
// [OnFull]). Panics, naming the stage, if n < 1, spec.Windows is unset
// or bad, spec.Fold is nil, spec.Merge is nil for [Sessions], or a
// duration is negative.
func Window[T any, K comparable, A any](p *Pipeline, name string, in Stream[T], n int, spec WindowSpec[T, K, A], opts ...StageOption) Stream[Pane[K, A]] {
	defer guard(p)
	label := kindWindow.label()
	checkWorkers(label, name, n)
	checkWindowSpec(label, name, spec.Windows, spec.Fold == nil, spec.Merge == nil,
		spec.OutOfOrder, spec.Lateness, spec.Idle, spec.Late != nil && spec.Time == nil)
	cfg := stageOptions(kindWindow, name, opts)
	// One worker by event time has no timer: it runs on the router's
	// goroutine.
	kc := newKeyedCore[T, Pane[K, A]](p, kindWindow, name, in, n, n == 1 && spec.Time != nil, cfg)
	ws := newWindowShared(p, kc.s, spec.Windows, spec.OutOfOrder, spec.Lateness, spec.Idle)
	key := spec.Key
	if key == nil {
		key = func(T) K { var k K; return k }
	}
	var late *sender[Late[T]]
	var le *edge[Late[T]]
	if spec.Late != nil {
		le = newEdge[Late[T]](p, kc.s, len(kc.s.workers), stageConfig{})
		le.deadLetters = true // not counted in the stage's Out
		le.branch = fmt.Sprintf("late stream of stage %q", name)
		*spec.Late = Stream[Late[T]]{le}
		late = newSender(le, 0, kc.s.workers[0])
	}
	r := &windowRouter[T, K, A]{ws: ws, hash: newKeyHash[K](), key: key, time: spec.Time, rc: kc.rc, late: late}
	r.init()
	kc.start(r, func(i int, w *worker, out *sender[Pane[K, A]]) keyWorker[T] {
		wl := late // a worker's late items (window_rejoin.go); inline, the router's
		if le != nil && !kc.inline {
			wl = newSender(le, i+1, w)
		}
		ww := newWindowWorker(ws, kc, out, wl, key, spec)
		if kc.inline {
			r.one = ww
		}
		return ww
	})
	kc.report(func(st *StageStats) {
		w := ws.stats()
		st.Window = &w
	})
	return Stream[Pane[K, A]]{kc.oe}
}

// checkWindowSpec panics on a bad WindowSpec, naming the stage.
func checkWindowSpec(label, name string, w Windows, nilFold, nilMerge bool, ooo, lateness, idle time.Duration, lateNoTime bool) {
	bad := func(f string, a ...any) {
		panic(fmt.Sprintf("sluice: %s %q: ", label, name) + fmt.Sprintf(f, a...))
	}
	switch {
	case w.show == "":
		bad("Windows is not set: use Tumbling, Hopping or Sessions")
	case w.sessions() && w.gap <= 0:
		bad("%v: gap must be > 0", w)
	case !w.sessions() && (w.size <= 0 || w.slide <= 0 || w.slide > w.size):
		bad("%v: want 0 < slide ≤ size", w)
	case nilFold:
		bad("nil Fold function")
	case w.sessions() && nilMerge:
		bad("%v needs a Merge function", w)
	case ooo < 0:
		bad("OutOfOrder must be ≥ 0, got %v", ooo)
	case lateness < 0:
		bad("Lateness must be ≥ 0, got %v", lateness)
	case idle < 0:
		bad("Idle must be ≥ 0, got %v", idle)
	case lateNoTime:
		bad("Late is set but Time is nil: with processing time no item is late")
	}
}

// paneSettler settles the inputs of one Pane when the Pane is settled.
type paneSettler struct {
	ws *windowShared
	rs []Receipt
	c  *windowCounters
}

func (ps *paneSettler) Settle(_ uint64, cause error) {
	ps.c.held.Add(-int64(len(ps.rs)))
	var last Settler
	var h *heldCount
	for _, r := range ps.rs {
		if r.t.to != last {
			last, h = r.t.to, ps.ws.heldFor(r.t.to)
		}
		h.n.Add(-1)
		if cause == nil {
			r.Ack()
		} else {
			r.Fail(cause)
		}
	}
	ps.rs = nil
}
