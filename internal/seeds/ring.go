package seeds

import (
	"runtime"
	"sync/atomic"
	"time"
)

// The single-producer single-consumer ring buffer of seed 004 ("When to
// Abandon Channels"), re-implemented generically as the baseline for
// ring.SPSC: a power-of-two slice with free-running write and read
// positions, TryWrite/TryRead that publish with one atomic store, and the
// seed's hybrid wait for callers that must block: spin for 1 µs, then
// runtime.Gosched, then sleep.
//
// Kept from the seed because it shapes the numbers: no padding between the
// two positions (they share a cache line with the slice header), no cached
// copy of the other side's position, no close, no batch operations, and the
// slot is not cleared after a read.
//
// Changed: the seed's TryWrite reads readPos with a plain load while the
// consumer stores it atomically. That is a data race under the Go memory
// model (and the race detector reports it), so it is an atomic load here; on
// amd64 and arm64 both compile to the same plain load, so the numbers are
// unaffected. The seed does not say how long it sleeps, and the answer
// shapes its throughput: on a 2-core machine one item at a time took ~20 ns
// per item with 1–10 µs sleeps, ~380 ns with 50 µs and ~1 µs with 1 ms,
// because a sleeping consumer lets the ring fill and then drains it in a
// run. RingSleep, the default, is the favourable 10 µs; RingBuffer.Sleep
// changes it. The price of a short sleep is idle CPU: a blocked reader wakes
// up to 1/RingSleep times a second for as long as it waits.

// RingSleep is how long a blocked RingBuffer call sleeps, by default, once
// spinning and yielding have not helped.
const RingSleep = 10 * time.Microsecond

// ringSpin is the seed's spin budget before it yields.
const ringSpin = time.Microsecond

// RingBuffer is the seed's SPSC ring: one goroutine writes, one reads.
type RingBuffer[T any] struct {
	// Sleep is how long Write and Read sleep per retry once the spin and
	// the yield are spent. Set it before use.
	Sleep time.Duration

	data     []T
	mask     uint64
	writePos uint64
	readPos  uint64
}

// NewRingBuffer returns a ring of size slots that sleeps RingSleep. As in
// the seed, size must be a power of two and is not checked.
func NewRingBuffer[T any](size int) *RingBuffer[T] {
	return &RingBuffer[T]{Sleep: RingSleep, data: make([]T, size), mask: uint64(size - 1)}
}

// TryWrite appends e and reports whether there was room.
func (r *RingBuffer[T]) TryWrite(e T) bool {
	pos := r.writePos
	if pos-atomic.LoadUint64(&r.readPos) >= uint64(len(r.data)) {
		return false
	}
	r.data[pos&r.mask] = e
	atomic.StoreUint64(&r.writePos, pos+1)
	return true
}

// TryRead removes the oldest item and reports whether there was one.
func (r *RingBuffer[T]) TryRead() (T, bool) {
	pos := r.readPos
	if atomic.LoadUint64(&r.writePos) == pos {
		var zero T
		return zero, false
	}
	e := r.data[pos&r.mask]
	atomic.StoreUint64(&r.readPos, pos+1)
	return e, true
}

// Write appends e, waiting the seed's way while the ring is full.
func (r *RingBuffer[T]) Write(e T) {
	var w ringWait
	for !r.TryWrite(e) {
		w.wait(r.Sleep)
	}
}

// Read removes the oldest item, waiting the seed's way while the ring is
// empty. There is no close: the caller must know how many items to read.
func (r *RingBuffer[T]) Read() T {
	var w ringWait
	for {
		if e, ok := r.TryRead(); ok {
			return e
		}
		w.wait(r.Sleep)
	}
}

// ringWait is the seed's hybrid wait: busy retries for the first
// microsecond, then one runtime.Gosched, then a sleep before every further
// retry.
type ringWait struct {
	start   time.Time
	started bool
	yielded bool
}

func (w *ringWait) wait(sleep time.Duration) {
	switch {
	case !w.started:
		w.start, w.started = time.Now(), true
	case time.Since(w.start) < ringSpin:
	case !w.yielded:
		w.yielded = true
		runtime.Gosched()
	default:
		time.Sleep(sleep)
	}
}
