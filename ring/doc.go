// Package ring provides lock-free bounded queues over a power-of-two ring:
// SPSC (one producer, one consumer), MPSC (many producers, one consumer) and
// MPMC (many producers, many consumers). They are for the hot edges of a
// program where a buffered channel is the bottleneck: a channel takes a lock
// for every item, tens of nanoseconds, more under contention, while these
// queues move a batch of items with one atomic operation. The package
// benchmarks measure each queue against a buffered channel of the same
// capacity.
//
// # Operations
//
// Every queue has the same methods:
//
//   - TryPush, TryPop, TryPushMany, TryPopMany never block.
//   - Push, Pop, PushMany, PopMany take a context.Context and block until
//     they can make progress, the queue is closed, or the context is done.
//   - Close, Len and Cap.
//
// The batch forms copy a whole run of items and publish it with one atomic
// operation, so their cost per item is that of a copy plus a few ns; moving
// items one at a time costs one or two atomic writes per item on each side.
// Queues are made by their constructors; their zero values are not usable.
//
// # Ordering
//
// Items come out in the order their pushes were linearised. For SPSC that is
// the producer's order. For MPSC and MPMC, items pushed by one goroutine come
// out in that goroutine's order (an MPMC consumer sees each producer's items
// in order, though the items of one producer may be split among consumers);
// pushes from different goroutines interleave. A batch pushed by one call is
// contiguous in the queue.
//
// # Waiting
//
// A blocking call that cannot make progress returns the context's error if
// the context is already done. Otherwise it waits in three phases: it spins
// briefly on the queue's indexes (32 checks), then yields the processor with
// runtime.Gosched up to 16 times, then parks on a channel until the other
// side signals it or the context is done. The other side signals only when a
// waiter has registered, so an operation that does not wait costs atomic
// loads and stores and takes no lock. An idle blocked goroutine uses no CPU
// once parked. No method starts a goroutine.
//
// When several goroutines are parked on the same side (MPSC producers, MPMC
// producers or consumers), one signal wakes them all and all but the winners
// park again; the ring suits a few goroutines per side, not hundreds.
//
// # Closing
//
// Close marks the queue closed and wakes every blocked call. It is
// idempotent: calling it again does nothing. After Close, pushes return
// ErrClosed; pops still return the items already in the queue and then
// ErrClosed. A push that returned nil, before or concurrently with Close, is
// delivered: it is never lost. Close is linearisable against pushes because
// the closed flag is the top bit of the producers' index, which every push
// must advance with a compare-and-swap.
//
// # Errors
//
// TryPush returns ErrFull and TryPop returns ErrEmpty when they would have to
// wait; the batch forms return a count (possibly zero) instead. The blocking
// forms return ErrClosed or the context's error. Constructing a queue with a
// capacity that is not a power of two ≥ 2, or too large for one allocation,
// and passing a nil context to a blocking form are programmer errors and
// panic with a message naming the package and the value. So is using a zero
// queue (one not made by its constructor): a zero SPSC, and a push on a zero
// MPSC, panic naming the constructor where they would otherwise report full
// or empty for ever; a zero MPMC, and a pop from a zero MPSC, panic on first
// use with the runtime's index error, as a check would cost their fast
// paths.
package ring

import (
	"context"
	"errors"
	"fmt"
	"unsafe"
)

var (
	// ErrClosed is returned by a push on a closed queue and by a pop on a
	// closed queue that holds no more items.
	ErrClosed = errors.New("ring: queue closed")
	// ErrFull is returned by TryPush when the queue has no free slot.
	ErrFull = errors.New("ring: queue full")
	// ErrEmpty is returned by TryPop when the queue holds no item ready to
	// be taken.
	ErrEmpty = errors.New("ring: queue empty")
)

// closedBit is the top bit of a queue's producer index (tail). Positions are
// free-running uint64 counters that start at zero and grow by one per item,
// so they never reach it.
const closedBit = uint64(1) << 63

// padSize separates fields written by different goroutines. A cache line is
// 64 bytes on amd64 and arm64, but Intel's adjacent-line prefetcher pulls
// lines in pairs, so two lines keep the producer's and the consumer's
// indexes from interfering.
const padSize = 128

type pad [padSize]byte

// maxRingBytes bounds a ring's allocation: the most a Go heap object can
// be on 64-bit platforms (runtime.maxAlloc, 2⁴⁸ bytes), and well beyond
// any memory a queue should take.
const maxRingBytes = 1 << 48

// checkCapacity panics unless c is a power of two ≥ 2 whose slots (a T
// each, plus extra bytes of bookkeeping) fit in one allocation, and returns
// c as a mask for indexing.
func checkCapacity[T any](kind string, c int, extra uintptr) uint64 {
	if c < 2 || c&(c-1) != 0 {
		panic(fmt.Sprintf("ring: %s capacity must be a power of two ≥ 2, got %d", kind, c))
	}
	var zero T
	if per := uint64(unsafe.Sizeof(zero) + extra); per > 0 && uint64(c) > maxRingBytes/per {
		panic(fmt.Sprintf("ring: %s capacity %d is too large: %d bytes per slot exceed what one allocation can hold", kind, c, per))
	}
	return uint64(c - 1)
}

// panicZero reports a queue of the given kind used without its
// constructor. Callers check for it only where the queue already looks full
// or empty (a zero queue has no slots), so the fast paths pay nothing.
func panicZero(kind string) {
	panic("ring: zero " + kind + " used: make one with New" + kind)
}

// checkContext panics if ctx is nil: a programmer error, which would
// otherwise surface as a nil dereference only once the queue is full or
// empty.
func checkContext(ctx context.Context, method string) {
	if ctx == nil {
		panic("ring: nil context passed to " + method)
	}
}

// copyIn copies xs into buf starting at position p, wrapping at the end of
// buf. The caller owns positions [p, p+len(xs)) and len(xs) ≤ len(buf).
func copyIn[T any](buf []T, mask, p uint64, xs []T) {
	n := copy(buf[p&mask:], xs)
	copy(buf, xs[n:])
}

// copyOut moves len(dst) items from buf starting at position p into dst and
// zeroes the slots so the ring keeps no references alive.
func copyOut[T any](dst, buf []T, mask, p uint64) {
	i := p & mask
	n := copy(dst, buf[i:])
	clear(buf[i : i+uint64(n)])
	m := copy(dst[n:], buf)
	clear(buf[:m])
}

// clearRing zeroes the n slots of buf starting at position p, wrapping at
// the end of buf.
func clearRing[T any](buf []T, mask, p, n uint64) {
	i := p & mask
	end := min(i+n, uint64(len(buf)))
	clear(buf[i:end])
	clear(buf[:n-(end-i)])
}
