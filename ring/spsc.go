package ring

import (
	"context"
	"sync/atomic"
)

// SPSC is a bounded FIFO queue for exactly one producer and one consumer.
// Create it with NewSPSC; the zero value is not usable.
//
// At most one goroutine at a time may call the push methods (TryPush, Push,
// TryPushMany, PushMany) and at most one at a time the pop methods; the two
// sides may run concurrently. Len, Cap and Close may be called from any
// goroutine. Breaking this rule corrupts the queue; use MPSC or MPMC instead.
//
// Cost: a push or pop of one item is an atomic compare-and-swap or store on
// the side's own cache line and a copy; batches publish once per call. Items
// are copied in and out, and the slot is zeroed on pop so the queue keeps no
// references alive. BenchmarkSPSC compares it with a channel of the same
// capacity; docs/performance.md has the figures.
type SPSC[T any] struct {
	_ pad
	// tail is the next position the producer fills, with closedBit set once
	// the queue is closed. Only the producer advances it (by CAS, so that a
	// push racing with Close either lands before the bit or fails); Close
	// only sets the bit.
	tail atomic.Uint64
	// headCache is a head the producer saw earlier. head only grows, so
	// tail-headCache over-estimates the fill level and the producer only
	// reloads head when the cached value says the ring is full.
	// Producer-private.
	headCache uint64
	_         [padSize - 16]byte
	// head is the next position the consumer reads. Only the consumer
	// writes it; the producer may reuse a slot once head has passed it.
	head atomic.Uint64
	// tailCache is a tail (without closedBit) the consumer saw earlier.
	// Consumer-private.
	tailCache uint64
	_         [padSize - 16]byte
	buf       []T
	mask      uint64
	_         pad
	notEmpty  waiter // the consumer parks here; the producer wakes it after publishing
	_         pad
	notFull   waiter // the producer parks here; the consumer wakes it after freeing slots
	_         pad
}

// NewSPSC returns an empty SPSC queue that holds up to capacity items. It
// panics if capacity is not a power of two ≥ 2. It allocates the ring once.
func NewSPSC[T any](capacity int) *SPSC[T] {
	mask := checkCapacity[T]("SPSC", capacity, 0)
	return &SPSC[T]{buf: make([]T, capacity), mask: mask}
}

// Cap returns the number of items the queue can hold.
func (q *SPSC[T]) Cap() int { return len(q.buf) }

// Len returns the number of items in the queue. With the producer or the
// consumer running, it is a snapshot that may be stale by the time it
// returns.
func (q *SPSC[T]) Len() int {
	h := q.head.Load()
	t := q.tail.Load() &^ closedBit
	// head was read first, so t ≥ h; but the consumer may have moved on and
	// the producer refilled in between, so t-h can exceed the capacity.
	return int(min(t-h, uint64(len(q.buf))))
}

// Close marks the queue closed and wakes every blocked call. It never
// blocks, and calling it again does nothing. Items already pushed can still
// be popped.
func (q *SPSC[T]) Close() {
	if q.tail.Or(closedBit)&closedBit != 0 {
		return
	}
	q.notEmpty.wakeAll()
	q.notFull.wakeAll()
}

// TryPush appends v if there is room, without blocking. It returns nil, or
// ErrFull when the queue is full, or ErrClosed when it is closed.
func (q *SPSC[T]) TryPush(v T) error {
	t := q.tail.Load()
	if t&closedBit != 0 {
		return ErrClosed
	}
	if t-q.headCache == uint64(len(q.buf)) {
		q.headCache = q.head.Load()
		if t-q.headCache == uint64(len(q.buf)) {
			if len(q.buf) == 0 {
				panicZero("SPSC")
			}
			return ErrFull
		}
	}
	i := t & q.mask
	q.buf[i] = v
	// Slot i is invisible to the consumer until tail passes it; the CAS
	// fails only if Close set closedBit since the load above.
	if !q.tail.CompareAndSwap(t, t+1) {
		var zero T
		q.buf[i] = zero
		return ErrClosed
	}
	q.notEmpty.wake()
	return nil
}

// TryPushMany appends as many items from the front of xs as fit, without
// blocking, and returns how many it appended: possibly fewer than len(xs),
// or zero when the queue is full. On a closed queue it returns 0, ErrClosed.
func (q *SPSC[T]) TryPushMany(xs []T) (int, error) {
	t := q.tail.Load()
	if t&closedBit != 0 {
		return 0, ErrClosed
	}
	size := uint64(len(q.buf))
	free := size - (t - q.headCache)
	if free < uint64(len(xs)) {
		q.headCache = q.head.Load()
		free = size - (t - q.headCache)
	}
	n := min(uint64(len(xs)), free)
	if n == 0 {
		if len(q.buf) == 0 {
			panicZero("SPSC")
		}
		return 0, nil
	}
	copyIn(q.buf, q.mask, t, xs[:n])
	if !q.tail.CompareAndSwap(t, t+n) {
		clearRing(q.buf, q.mask, t, n)
		return 0, ErrClosed
	}
	q.notEmpty.wake()
	return int(n), nil
}

// TryPop removes and returns the oldest item, without blocking. It returns
// ErrEmpty when the queue is empty and ErrClosed when it is closed and empty.
func (q *SPSC[T]) TryPop() (T, error) {
	var zero T
	h := q.head.Load()
	if h == q.tailCache {
		t := q.tail.Load()
		q.tailCache = t &^ closedBit
		if h == q.tailCache {
			if len(q.buf) == 0 {
				panicZero("SPSC")
			}
			if t&closedBit != 0 {
				return zero, ErrClosed
			}
			return zero, ErrEmpty
		}
	}
	i := h & q.mask
	v := q.buf[i]
	q.buf[i] = zero
	q.head.Store(h + 1)
	q.notFull.wake()
	return v, nil
}

// TryPopMany moves up to len(dst) of the oldest items into dst, without
// blocking, and returns how many it moved: zero when the queue is empty. On
// a closed queue with no items left it returns 0, ErrClosed.
func (q *SPSC[T]) TryPopMany(dst []T) (int, error) {
	h := q.head.Load()
	avail := q.tailCache - h
	if avail < uint64(len(dst)) || avail == 0 {
		t := q.tail.Load()
		q.tailCache = t &^ closedBit
		avail = q.tailCache - h
		if avail == 0 && t&closedBit != 0 {
			return 0, ErrClosed
		}
	}
	n := min(uint64(len(dst)), avail)
	if n == 0 {
		if len(q.buf) == 0 {
			panicZero("SPSC")
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
func (q *SPSC[T]) Push(ctx context.Context, v T) error {
	checkContext(ctx, "SPSC.Push")
	if err := q.TryPush(v); err != ErrFull {
		return err
	}
	return pushWait[T](ctx, q, v)
}

// PushMany appends all of xs in order, blocking whenever the queue is full,
// and returns how many it appended. It stops early with ErrClosed if the
// queue is or becomes closed, or with ctx's error if ctx is done while it
// waits; the items it counted are in the queue either way.
func (q *SPSC[T]) PushMany(ctx context.Context, xs []T) (int, error) {
	checkContext(ctx, "SPSC.PushMany")
	n, err := q.TryPushMany(xs)
	if err != nil || n == len(xs) {
		return n, err
	}
	return pushManyWait[T](ctx, q, xs, n)
}

// Pop removes and returns the oldest item, blocking while the queue is
// empty. It returns ErrClosed once the queue is closed and empty, or ctx's
// error if ctx is done while it waits. If an item is ready, Pop returns it
// even when ctx is already done.
func (q *SPSC[T]) Pop(ctx context.Context) (T, error) {
	checkContext(ctx, "SPSC.Pop")
	if v, err := q.TryPop(); err != ErrEmpty {
		return v, err
	}
	return popWait[T](ctx, q)
}

// PopMany moves up to len(dst) of the oldest items into dst, blocking only
// while the queue is empty: it returns as soon as it has moved at least one
// item, without waiting to fill dst. It returns 0 and ErrClosed once the
// queue is closed and empty, or 0 and ctx's error if ctx is done while it
// waits. With an empty dst it returns at once.
func (q *SPSC[T]) PopMany(ctx context.Context, dst []T) (int, error) {
	checkContext(ctx, "SPSC.PopMany")
	if n, err := q.TryPopMany(dst); n > 0 || err != nil || len(dst) == 0 {
		return n, err
	}
	return popManyWait[T](ctx, q, dst)
}

// readable reports whether a pop could make progress: an item is published
// or the queue is closed. Called by the consumer only.
func (q *SPSC[T]) readable() bool {
	t := q.tail.Load()
	return t&^closedBit != q.head.Load() || t&closedBit != 0
}

// writable reports whether a push could make progress. Called by the
// producer only.
func (q *SPSC[T]) writable() bool {
	t := q.tail.Load()
	return t&closedBit != 0 || t-q.head.Load() < uint64(len(q.buf))
}

func (q *SPSC[T]) waiters() (notEmpty, notFull *waiter) { return &q.notEmpty, &q.notFull }
