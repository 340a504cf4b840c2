package chans

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Overflow channels: bounded queues whose Send never blocks. When full, one
// value is discarded and counted, as in seed 004's "drop with a metric"
// (a non-blocking send whose default case bumps a counter): DropNewest
// discards the value being sent, DropOldest the oldest one queued. Dropped
// and Len give the counter and the queue depth for metrics.

// DropNewestChan is a bounded channel whose Send never blocks: when the
// buffer is full the new value is discarded and counted. Receive from Out.
// Make one with NewDropNewest; the zero value is not usable. It starts no
// goroutine.
type DropNewestChan[T any] struct {
	ch      chan T
	dropped atomic.Uint64
	closed  atomic.Bool
}

// NewDropNewest returns an empty DropNewestChan holding up to capacity
// values. It panics if capacity < 1 or too large for one allocation.
func NewDropNewest[T any](capacity int) *DropNewestChan[T] {
	if capacity < 1 {
		panic(fmt.Sprintf("chans: capacity must be ≥ 1, got %d", capacity))
	}
	checkFits[T]("DropNewestChan", capacity)
	return &DropNewestChan[T]{ch: make(chan T, capacity)}
}

// Send queues v if there is room and reports whether it did; otherwise v is
// discarded and counted. It never blocks: a non-blocking channel send, plus
// an atomic add when dropping. Sending after Close panics.
func (d *DropNewestChan[T]) Send(v T) bool {
	if d.closed.Load() {
		panic("chans: Send on closed DropNewestChan")
	}
	select {
	case d.ch <- v:
		return true
	default:
		if d.ch == nil { // a nil channel takes nothing: all would be dropped
			panicZero("DropNewestChan", "NewDropNewest")
		}
		d.dropped.Add(1)
		return false
	}
}

// Out returns the channel to receive from, in the order values were queued.
// It is closed by Close, after the values it still holds.
func (d *DropNewestChan[T]) Out() <-chan T {
	if d.ch == nil {
		panicZero("DropNewestChan", "NewDropNewest")
	}
	return d.ch
}

// Dropped returns how many values Send has discarded.
func (d *DropNewestChan[T]) Dropped() uint64 { return d.dropped.Load() }

// Len returns how many values are queued.
func (d *DropNewestChan[T]) Len() int { return len(d.ch) }

// Cap returns the capacity.
func (d *DropNewestChan[T]) Cap() int { return cap(d.ch) }

// Close ends the input: Out is closed once drained. It must not run
// concurrently with Send, and Send after it panics; a second Close is
// harmless.
func (d *DropNewestChan[T]) Close() {
	if d.ch == nil {
		panicZero("DropNewestChan", "NewDropNewest")
	}
	if d.closed.CompareAndSwap(false, true) {
		close(d.ch)
	}
}

// DropOldestQueue is a bounded queue whose Send never blocks: when it is full
// the oldest value is discarded and counted to make room, so receivers
// always get the most recent values. Receive with Recv or TryRecv. Make one
// with NewDropOldest; the zero value is not usable. It starts no goroutine.
type DropOldestQueue[T any] struct {
	mu      sync.Mutex
	buf     []T // ring of fixed capacity
	head, n int // oldest value at buf[head]; n values queued
	closed  bool
	waiters int
	ready   chan struct{} // buffered 1: a value is there for a waiting Recv
	closing chan struct{} // closed by Close
	dropped atomic.Uint64
}

// NewDropOldest returns an empty DropOldestQueue holding up to capacity
// values. It panics if capacity < 1 or too large for one allocation.
func NewDropOldest[T any](capacity int) *DropOldestQueue[T] {
	if capacity < 1 {
		panic(fmt.Sprintf("chans: capacity must be ≥ 1, got %d", capacity))
	}
	checkFits[T]("DropOldestQueue", capacity)
	return &DropOldestQueue[T]{
		buf:     make([]T, capacity),
		ready:   make(chan struct{}, 1),
		closing: make(chan struct{}),
	}
}

// Send queues v and reports whether it did so without dropping anything;
// when the queue was full it discards the oldest value first and counts it.
// It never blocks for long: one mutex round trip, plus a wakeup when a Recv
// was waiting. Sending after Close panics.
func (d *DropOldestQueue[T]) Send(v T) bool {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		panic("chans: Send on closed DropOldestQueue")
	}
	kept := true
	if d.n == len(d.buf) {
		if len(d.buf) == 0 {
			d.mu.Unlock()
			panicZero("DropOldestQueue", "NewDropOldest")
		}
		var zero T
		d.buf[d.head] = zero
		d.head = (d.head + 1) % len(d.buf)
		d.n--
		d.dropped.Add(1)
		kept = false
	}
	d.buf[(d.head+d.n)%len(d.buf)] = v
	d.n++
	if d.waiters > 0 {
		select {
		case d.ready <- struct{}{}:
		default:
		}
	}
	d.mu.Unlock()
	return kept
}

// Recv removes and returns the oldest value, waiting while the queue is
// empty. It returns ErrClosed once Close has been called and the queue is
// empty, and ctx.Err() if ctx is done first.
func (d *DropOldestQueue[T]) Recv(ctx context.Context) (T, error) {
	if ctx == nil {
		panic("chans: nil context passed to DropOldestQueue.Recv")
	}
	d.mu.Lock()
	for d.n == 0 {
		if d.closed {
			d.mu.Unlock()
			var zero T
			return zero, ErrClosed
		}
		if d.ready == nil {
			d.mu.Unlock()
			panicZero("DropOldestQueue", "NewDropOldest")
		}
		d.waiters++
		d.mu.Unlock()
		var err error
		select {
		case <-d.ready:
		case <-d.closing:
		case <-ctx.Done():
			err = ctx.Err()
		}
		d.mu.Lock()
		d.waiters--
		if err != nil {
			d.mu.Unlock()
			var zero T
			return zero, err
		}
	}
	v := d.popLocked()
	d.mu.Unlock()
	return v, nil
}

// TryRecv removes and returns the oldest value if there is one, without
// waiting.
func (d *DropOldestQueue[T]) TryRecv() (T, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n == 0 {
		var zero T
		return zero, false
	}
	return d.popLocked(), true
}

// popLocked takes the oldest value (n > 0) and passes the value-ready hint
// on to the next waiting Recv if values remain.
func (d *DropOldestQueue[T]) popLocked() T {
	var zero T
	v := d.buf[d.head]
	d.buf[d.head] = zero
	d.head = (d.head + 1) % len(d.buf)
	d.n--
	if d.n > 0 && d.waiters > 0 {
		select {
		case d.ready <- struct{}{}:
		default:
		}
	}
	return v
}

// Dropped returns how many values Send has discarded.
func (d *DropOldestQueue[T]) Dropped() uint64 { return d.dropped.Load() }

// Len returns how many values are queued.
func (d *DropOldestQueue[T]) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// Cap returns the capacity.
func (d *DropOldestQueue[T]) Cap() int { return len(d.buf) }

// Close ends the input: waiting and later Recv calls return what is queued,
// then ErrClosed. Send after Close panics; a second Close is harmless.
func (d *DropOldestQueue[T]) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed {
		d.closed = true
		close(d.closing)
	}
}
