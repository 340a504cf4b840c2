package ring

import (
	"context"
	"sync/atomic"
	"unsafe"
)

// MPMC is a bounded FIFO queue for any number of producers and consumers.
// Create it with NewMPMC; the zero value is not usable. Any goroutine may
// call any method.
//
// It is a bounded queue with a sequence number per slot, after Dmitry
// Vyukov's design: a producer claims positions by compare-and-swap on the
// tail and a consumer on the head, and each slot's sequence number says
// whether it is free for the producer of a given lap or holds that lap's
// item. A producer stalled between its claim and its write delays the
// consumers, which wait for its slot, but never the other producers.
//
// Cost: a push or pop claims its run of slots with one compare-and-swap
// (retried under contention), whatever the run's length; each item then
// costs its copy, an atomic load and an atomic store of its slot's sequence
// number. Every slot is 8 bytes larger than T. BenchmarkMPMC compares it
// with a channel of the same capacity; docs/performance.md has the
// figures.
type MPMC[T any] struct {
	_ pad
	// tail is the next position producers claim, with closedBit set once the
	// queue is closed. Producers advance it by CAS; Close only sets the bit.
	tail atomic.Uint64
	_    [padSize - 8]byte
	// head is the next position consumers claim. Consumers advance it by CAS.
	head     atomic.Uint64
	_        [padSize - 8]byte
	slots    []slot[T]
	mask     uint64
	_        pad
	notEmpty waiter
	_        pad
	notFull  waiter
	_        pad
}

// slot holds the item of position p once seq == p+1. seq == p means the slot
// is free for the producer of position p: the consumer of position p-cap
// stores it after moving the item out. Only the goroutine that claimed
// position p (by moving tail or head past it) touches val.
type slot[T any] struct {
	seq atomic.Uint64
	val T
}

// NewMPMC returns an empty MPMC queue that holds up to capacity items. It
// panics if capacity is not a power of two ≥ 2. It allocates the ring once.
func NewMPMC[T any](capacity int) *MPMC[T] {
	mask := checkCapacity[T]("MPMC", capacity, unsafe.Sizeof(atomic.Uint64{}))
	q := &MPMC[T]{slots: make([]slot[T], capacity), mask: mask}
	for i := range q.slots {
		q.slots[i].seq.Store(uint64(i))
	}
	return q
}

// Cap returns the number of items the queue can hold.
func (q *MPMC[T]) Cap() int { return len(q.slots) }

// Len returns the number of items in the queue, counting those being copied
// in or out. It is a snapshot that may be stale by the time it returns.
func (q *MPMC[T]) Len() int {
	h := q.head.Load()
	t := q.tail.Load() &^ closedBit
	return int(min(t-h, uint64(len(q.slots)))) // t ≥ h: head was read first
}

// Close marks the queue closed and wakes every blocked call. It never
// blocks, and calling it again does nothing. Items already pushed can still
// be popped.
func (q *MPMC[T]) Close() {
	if q.tail.Or(closedBit)&closedBit != 0 {
		return
	}
	q.notEmpty.wakeAll()
	q.notFull.wakeAll()
}

// TryPush appends v if there is room, without blocking. It returns nil, or
// ErrFull when the queue is full, or ErrClosed when it is closed.
func (q *MPMC[T]) TryPush(v T) error {
	for {
		t := q.tail.Load()
		if t&closedBit != 0 {
			return ErrClosed
		}
		s := &q.slots[t&q.mask]
		switch d := int64(s.seq.Load() - t); {
		case d == 0: // free for position t
			if q.tail.CompareAndSwap(t, t+1) {
				s.val = v
				s.seq.Store(t + 1)
				q.notEmpty.wake()
				return nil
			}
		case d < 0: // still holds the previous lap's item
			return ErrFull
		} // d > 0: another producer claimed t since we read tail
	}
}

// TryPushMany appends as many items from the front of xs as fit, as one
// contiguous run, without blocking, and returns how many it appended:
// possibly fewer than len(xs), or zero when the queue is full. On a closed
// queue it returns 0, ErrClosed.
func (q *MPMC[T]) TryPushMany(xs []T) (int, error) {
	for {
		t := q.tail.Load()
		if t&closedBit != 0 {
			return 0, ErrClosed
		}
		// Count the free slots from t. A slot stays free for position p
		// until the producer that claims p writes it, so what the loads see
		// still holds after the CAS below succeeds.
		n := uint64(0)
		for n < uint64(len(xs)) && q.slots[(t+n)&q.mask].seq.Load() == t+n {
			n++
		}
		if n == 0 {
			if len(xs) == 0 || int64(q.slots[t&q.mask].seq.Load()-t) < 0 {
				return 0, nil // the slot at t still holds the previous lap's item: full
			}
			continue // another producer claimed t since we read tail
		}
		if !q.tail.CompareAndSwap(t, t+n) {
			continue
		}
		for i := range n {
			s := &q.slots[(t+i)&q.mask]
			s.val = xs[i]
			s.seq.Store(t + i + 1)
		}
		q.notEmpty.wake()
		return int(n), nil
	}
}

// TryPop removes and returns the oldest item, without blocking. It returns
// ErrEmpty when no item is ready (the queue is empty, or the oldest push is
// still copying its item in) and ErrClosed when the queue is closed and
// empty.
func (q *MPMC[T]) TryPop() (T, error) {
	var zero T
	for {
		h := q.head.Load()
		s := &q.slots[h&q.mask]
		switch d := int64(s.seq.Load() - (h + 1)); {
		case d == 0: // holds position h's item
			if q.head.CompareAndSwap(h, h+1) {
				v := s.val
				s.val = zero
				s.seq.Store(h + uint64(len(q.slots)))
				q.notFull.wake()
				return v, nil
			}
		case d < 0: // position h is not written yet, so h is still the head
			t := q.tail.Load()
			if t&closedBit != 0 && t&^closedBit == h {
				return zero, ErrClosed
			}
			return zero, ErrEmpty
		} // d > 0: another consumer claimed h since we read head
	}
}

// TryPopMany moves up to len(dst) of the oldest ready items into dst, as
// one contiguous run, without blocking, and returns how many it moved: zero
// when none is ready. On a closed queue with no items left it returns 0,
// ErrClosed.
func (q *MPMC[T]) TryPopMany(dst []T) (int, error) {
	var zero T
	for {
		h := q.head.Load()
		// Count the ready slots from h. If another consumer claims them
		// first, the CAS below fails and we count again.
		n := uint64(0)
		for n < uint64(len(dst)) && q.slots[(h+n)&q.mask].seq.Load() == h+n+1 {
			n++
		}
		if n == 0 {
			if int64(q.slots[h&q.mask].seq.Load()-(h+1)) < 0 {
				// Position h is not written yet, so h is still the head:
				// the queue is empty or its oldest push is still copying.
				t := q.tail.Load()
				if t&closedBit != 0 && t&^closedBit == h {
					return 0, ErrClosed
				}
				return 0, nil
			}
			if len(dst) == 0 {
				return 0, nil
			}
			continue // another consumer claimed h since we read head
		}
		if !q.head.CompareAndSwap(h, h+n) {
			continue
		}
		size := uint64(len(q.slots))
		for i := range n {
			s := &q.slots[(h+i)&q.mask]
			dst[i] = s.val
			s.val = zero
			s.seq.Store(h + i + size)
		}
		q.notFull.wake()
		return int(n), nil
	}
}

// Push appends v, blocking while the queue is full. It returns nil, or
// ErrClosed if the queue is or becomes closed before v is appended, or
// ctx's error if ctx is done first (v is then not appended). If there is
// room, Push appends v even when ctx is already done.
func (q *MPMC[T]) Push(ctx context.Context, v T) error {
	checkContext(ctx, "MPMC.Push")
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
func (q *MPMC[T]) PushMany(ctx context.Context, xs []T) (int, error) {
	checkContext(ctx, "MPMC.PushMany")
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
func (q *MPMC[T]) Pop(ctx context.Context) (T, error) {
	checkContext(ctx, "MPMC.Pop")
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
func (q *MPMC[T]) PopMany(ctx context.Context, dst []T) (int, error) {
	checkContext(ctx, "MPMC.PopMany")
	if n, err := q.TryPopMany(dst); n > 0 || err != nil || len(dst) == 0 {
		return n, err
	}
	return popManyWait[T](ctx, q, dst)
}

// readable reports whether a pop could make progress: the slot at head is
// written (or head has moved on, which is worth a retry), or the queue is
// closed and drained. Each load is fresh when made, so a false answer is
// true at that moment, and the push that changes it wakes the waiter.
func (q *MPMC[T]) readable() bool {
	h := q.head.Load()
	if int64(q.slots[h&q.mask].seq.Load()-(h+1)) >= 0 {
		return true
	}
	t := q.tail.Load()
	return t&closedBit != 0 && t&^closedBit == h
}

// writable reports whether a push could make progress: the slot at tail is
// free (or tail has moved on, which is worth a retry), or the queue is
// closed.
func (q *MPMC[T]) writable() bool {
	t := q.tail.Load()
	return t&closedBit != 0 || int64(q.slots[t&q.mask].seq.Load()-t) >= 0
}

func (q *MPMC[T]) waiters() (notEmpty, notFull *waiter) { return &q.notEmpty, &q.notFull }
