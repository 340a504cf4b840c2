package ring

import (
	"context"
	"sync/atomic"
	"unsafe"
)

// MPSC is a bounded FIFO queue for any number of producers and one consumer.
// Create it with NewMPSC; the zero value is not usable.
//
// Any goroutine may push. At most one goroutine at a time may call the pop
// methods (TryPop, Pop, TryPopMany, PopMany). Len, Cap and Close may be
// called from any goroutine.
//
// Cost: a push reserves its run of slots with one compare-and-swap (retried
// under contention), copies the items and publishes the run with one atomic
// store, however long the run is. The consumer follows the runs and frees
// the slots it has read with one atomic store per pop call. BenchmarkMPSC
// compares it with a channel of the same capacity; docs/performance.md has
// the figures.
type MPSC[T any] struct {
	_ pad
	// tail is the next position to reserve, with closedBit set once the
	// queue is closed. Producers advance it by CAS; Close only sets the bit,
	// so a reservation either precedes Close or fails.
	tail atomic.Uint64
	// headCache is a head value some producer has seen, so at most head.
	// Producers check for room against it and load head, which the consumer
	// writes on every pop, only when it says the ring is full.
	headCache atomic.Uint64
	_         [padSize - 16]byte
	// head is the next position the consumer reads. Only the consumer
	// writes it; a producer may reserve position p only while p < head+cap.
	head atomic.Uint64
	// ready is the end of the runs the consumer has seen published: every
	// position in [head, ready) holds an item. It always sits at the start
	// of a run. Consumer-private.
	ready uint64
	_     [padSize - 16]byte
	buf   []T
	// runs[p&mask] is the header of the run that starts at position p. The
	// headers of positions inside a run are left from earlier laps and are
	// never read: the consumer jumps from one run's start to the next.
	runs     []run
	mask     uint64
	_        pad
	notEmpty waiter
	_        pad
	notFull  waiter
	_        pad
}

// run is the header of a run of items pushed by one call.
type run struct {
	// seq is p+1 once the run starting at position p is written. A header
	// left from an earlier lap holds p+1-k·cap for some k ≥ 1, and an
	// unused one holds 0, so neither is mistaken for the current run; this
	// also stops the consumer's walk one lap past head, where it finds its
	// own lap's headers.
	seq atomic.Uint64
	// n is the run's length, at least 1. It is written before seq is
	// stored and read after seq is loaded, which orders the two.
	n uint64
}

// NewMPSC returns an empty MPSC queue that holds up to capacity items. It
// panics if capacity is not a power of two ≥ 2. It allocates the ring
// (capacity items, plus a 16-byte run header per slot) once.
func NewMPSC[T any](capacity int) *MPSC[T] {
	mask := checkCapacity[T]("MPSC", capacity, unsafe.Sizeof(run{}))
	q := &MPSC[T]{buf: make([]T, capacity), runs: make([]run, capacity), mask: mask}
	q.notEmpty.spins, q.notFull.spins = mpscSpinChecks, mpscSpinChecks
	return q
}

// Cap returns the number of items the queue can hold.
func (q *MPSC[T]) Cap() int { return len(q.buf) }

// Len returns the number of items in the queue, counting those whose push
// is still copying them in. It is a snapshot that may be stale by the time
// it returns.
func (q *MPSC[T]) Len() int {
	h := q.head.Load()
	t := q.tail.Load() &^ closedBit
	return int(min(t-h, uint64(len(q.buf)))) // t ≥ h: head was read first
}

// Close marks the queue closed and wakes every blocked call. It never
// blocks, and calling it again does nothing. Items already pushed can still
// be popped.
func (q *MPSC[T]) Close() {
	if q.tail.Or(closedBit)&closedBit != 0 {
		return
	}
	q.notEmpty.wakeAll()
	q.notFull.wakeAll()
}

// reserve claims up to want (≥ 1) consecutive positions and returns the
// first and how many, or ErrClosed. It returns n == 0 when the ring is full.
func (q *MPSC[T]) reserve(want uint64) (p, n uint64, err error) {
	size := uint64(len(q.buf))
	for {
		t := q.tail.Load()
		if t&closedBit != 0 {
			return 0, 0, ErrClosed
		}
		h := q.headCache.Load()
		if h > t {
			continue // t is stale: others pushed and the consumer popped in between
		}
		if t-h+want > size {
			h = q.head.Load()
			if h > t {
				continue
			}
			q.headCache.Store(h) // may move it back; that only costs another load of head
		}
		n := min(want, size-(t-h))
		if n == 0 {
			if size == 0 {
				panicZero("MPSC")
			}
			return 0, 0, nil
		}
		if q.tail.CompareAndSwap(t, t+n) {
			return t, n, nil
		}
	}
}

// publish makes the run [p, p+n) visible to the consumer.
func (q *MPSC[T]) publish(p, n uint64) {
	r := &q.runs[p&q.mask]
	r.n = n
	r.seq.Store(p + 1)
	q.notEmpty.wake()
}

// TryPush appends v if there is room, without blocking. It returns nil, or
// ErrFull when the queue is full, or ErrClosed when it is closed.
func (q *MPSC[T]) TryPush(v T) error {
	// Fast path: one CAS when the queue is open, headCache shows room and
	// no other producer moves tail in between. A closed tail has closedBit
	// set, so the subtraction below is huge and takes the general path.
	p := q.tail.Load()
	if p-q.headCache.Load() >= uint64(len(q.buf)) || !q.tail.CompareAndSwap(p, p+1) {
		var n uint64
		var err error
		if p, n, err = q.reserve(1); err != nil {
			return err
		}
		if n == 0 {
			return ErrFull
		}
	}
	q.buf[p&q.mask] = v
	q.publish(p, 1)
	return nil
}

// TryPushMany appends as many items from the front of xs as fit, as one
// contiguous run, without blocking, and returns how many it appended:
// possibly fewer than len(xs), or zero when the queue is full. On a closed
// queue it returns 0, ErrClosed.
func (q *MPSC[T]) TryPushMany(xs []T) (int, error) {
	if len(xs) == 0 {
		if q.tail.Load()&closedBit != 0 {
			return 0, ErrClosed
		}
		return 0, nil
	}
	p, n, err := q.reserve(uint64(len(xs)))
	if n == 0 {
		return 0, err
	}
	copyIn(q.buf, q.mask, p, xs[:n])
	q.publish(p, n)
	return int(n), nil
}

// advance extends ready over published runs until it covers want items past
// h or reaches a run not yet published, and returns how many items are
// ready. Consumer only.
func (q *MPSC[T]) advance(h, want uint64) uint64 {
	for q.ready-h < want {
		r := &q.runs[q.ready&q.mask]
		if r.seq.Load() != q.ready+1 {
			break
		}
		q.ready += r.n
	}
	return q.ready - h
}

// drained reports whether the queue is closed and every reserved position
// below h has been read, i.e. nothing more will ever arrive. Consumer only.
func (q *MPSC[T]) drained(h uint64) bool {
	t := q.tail.Load()
	return t&closedBit != 0 && t&^closedBit == h
}

// TryPop removes and returns the oldest item, without blocking. It returns
// ErrEmpty when no item is ready (the queue is empty, or the oldest push is
// still copying its items in) and ErrClosed when the queue is closed and
// empty.
func (q *MPSC[T]) TryPop() (T, error) {
	var zero T
	h := q.head.Load()
	if q.advance(h, 1) == 0 {
		if q.drained(h) {
			return zero, ErrClosed
		}
		return zero, ErrEmpty
	}
	i := h & q.mask
	v := q.buf[i]
	q.buf[i] = zero
	q.head.Store(h + 1)
	q.notFull.wake()
	return v, nil
}

// TryPopMany moves up to len(dst) of the oldest ready items into dst,
// without blocking, and returns how many it moved: zero when none is ready.
// On a closed queue with no items left it returns 0, ErrClosed.
func (q *MPSC[T]) TryPopMany(dst []T) (int, error) {
	h := q.head.Load()
	n := min(q.advance(h, uint64(len(dst))), uint64(len(dst)))
	if n == 0 {
		if q.ready == h && q.drained(h) {
			return 0, ErrClosed
		}
		return 0, nil
	}
	copyOut(dst[:n], q.buf, q.mask, h)
	q.head.Store(h + n)
	q.notFull.wake()
	return int(n), nil
}

// Push appends v, blocking while the queue is full. It returns nil, or
// ErrClosed if the queue is or becomes closed before v is appended, or
// ctx's error if ctx is done first (v is then not appended). If there is
// room, Push appends v even when ctx is already done.
func (q *MPSC[T]) Push(ctx context.Context, v T) error {
	checkContext(ctx, "MPSC.Push")
	if err := q.TryPush(v); err != ErrFull {
		return err
	}
	return pushWait[T](ctx, q, v)
}

// PushMany appends all of xs in order, blocking whenever the queue is full,
// and returns how many it appended. While it waits, other producers' items
// may land between its runs. It stops early with ErrClosed if the queue is
// or becomes closed, or with ctx's error if ctx is done while it waits; the
// items it counted are in the queue either way.
func (q *MPSC[T]) PushMany(ctx context.Context, xs []T) (int, error) {
	checkContext(ctx, "MPSC.PushMany")
	n, err := q.TryPushMany(xs)
	if err != nil || n == len(xs) {
		return n, err
	}
	return pushManyWait[T](ctx, q, xs, n)
}

// Pop removes and returns the oldest item, blocking while none is ready. It
// returns ErrClosed once the queue is closed and empty, or ctx's error if
// ctx is done while it waits. If an item is ready, Pop returns it even when
// ctx is already done.
func (q *MPSC[T]) Pop(ctx context.Context) (T, error) {
	checkContext(ctx, "MPSC.Pop")
	if v, err := q.TryPop(); err != ErrEmpty {
		return v, err
	}
	return popWait[T](ctx, q)
}

// PopMany moves up to len(dst) of the oldest items into dst, blocking only
// while none is ready: it returns as soon as it has moved at least one item,
// without waiting to fill dst. It returns 0 and ErrClosed once the queue is
// closed and empty, or 0 and ctx's error if ctx is done while it waits. With
// an empty dst it returns at once.
func (q *MPSC[T]) PopMany(ctx context.Context, dst []T) (int, error) {
	checkContext(ctx, "MPSC.PopMany")
	if n, err := q.TryPopMany(dst); n > 0 || err != nil || len(dst) == 0 {
		return n, err
	}
	return popManyWait[T](ctx, q, dst)
}

// readable reports whether a pop could make progress: the run at ready is
// published, or the queue is closed and drained. A closed queue whose last
// push is still copying is not readable: that push's publish wakes the
// consumer. Consumer only.
func (q *MPSC[T]) readable() bool {
	h := q.head.Load()
	return q.ready != h || q.runs[q.ready&q.mask].seq.Load() == q.ready+1 || q.drained(h)
}

// writable reports whether a push could make progress. It reads head
// before tail: a stale head can only make it report false wrongly because
// of a pop that happened after the caller registered as a waiter, and that
// pop wakes it. (Reading tail first could see head pass a stale tail and
// report the ring full while it is empty, with nobody left to wake us.)
func (q *MPSC[T]) writable() bool {
	h := q.head.Load()
	t := q.tail.Load()
	return t&closedBit != 0 || (t&^closedBit)-h < uint64(len(q.buf))
}

func (q *MPSC[T]) waiters() (notEmpty, notFull *waiter) { return &q.notEmpty, &q.notFull }
