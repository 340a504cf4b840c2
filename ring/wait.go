package ring

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// The waiting budget before a goroutine parks. A check is an atomic load or
// two: about a nanosecond while the line is unchanged, up to ~100 ns when the
// other core has just written it. So the spin lasts tens of nanoseconds to a
// few microseconds, shorter than the seed's 1 µs: a waiter that polls steals
// the cache line the other side is writing, while one that yields lets items
// pile up and then takes them as a run (natural batching). On a 2-core
// machine, a budget of 256 checks made the benchmarks in bench_test.go
// slower than 16 to 64 did, measured in the same runs. Each yield lets the
// other goroutines of this P run first; when none is runnable it returns in
// well under a microsecond. The spin and the yields are bounded, so an idle
// waiter ends up parked.
const (
	spinChecks  = 32
	yieldChecks = 16
	// mpscSpinChecks is MPSC's budget, on both sides. With several
	// producers, a spinning waiter keeps loading the lines the others are
	// writing (tail, the run headers, head); yielding sooner lets them run.
	// Measured on 2 vCPUs, single items, 8 interleaved runs of
	// BenchmarkMPSC: with 4 producers a 1024 channel took 1.67× the ring's
	// time at median with 4 checks against 0.83× with 32; with one
	// producer the ring's median fell from ~56 to ~25 ns/item; batches
	// unchanged. MPMC and SPSC keep 32: MPMC's single items were ~25 %
	// slower with 4.
	mpscSpinChecks = 4
)

// waiter parks the goroutines that wait for one condition of a queue (items
// to pop, or space to push) and lets the other side wake them.
//
// The protocol is Dekker's: a waiter increments parked and then re-checks
// the condition; a signaller publishes its index and then loads parked. All
// of these are sequentially consistent atomics, so either the waiter's
// re-check sees the new index or the signaller sees parked ≠ 0 and wakes it.
// A signaller that sees parked == 0 does nothing more, which keeps the fast
// path free of locks.
//
// parked and ch change only under mu. Every goroutine counted in parked
// holds the current ch, so closing ch wakes exactly the goroutines counted,
// and the closer resets parked to zero on their behalf.
type waiter struct {
	// spins, when not zero, replaces spinChecks for this waiter.
	spins  int
	parked atomic.Int32
	mu     sync.Mutex
	ch     chan struct{} // closed to wake the parked goroutines; nil when none has parked since the last wake
}

// await returns nil once ready reports true (possibly spuriously: the caller
// re-tries its operation and may wait again), or ctx's error if ctx is done
// while parked. ready must be cheap and must not block, and when it reports
// false, the change that would make it true must be one the other side makes
// after ready's loads and follows with wake; a false answer computed from a
// stale mix of loads could park the caller for good (see MPSC.writable).
func (w *waiter) await(ctx context.Context, ready func() bool) error {
	spins := spinChecks
	if w.spins != 0 {
		spins = w.spins
	}
	for range spins {
		if ready() {
			return nil
		}
	}
	for range yieldChecks {
		runtime.Gosched()
		if ready() {
			return nil
		}
	}
	return w.park(ctx, ready)
}

func (w *waiter) park(ctx context.Context, ready func() bool) error {
	w.mu.Lock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	ch := w.ch
	w.parked.Add(1)
	w.mu.Unlock()

	if ready() {
		w.leave(ch)
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		w.leave(ch)
		return ctx.Err()
	}
}

// leave un-counts a goroutine that stops waiting on ch by itself. If ch has
// been closed in the meantime, the closer has already un-counted it.
func (w *waiter) leave(ch chan struct{}) {
	w.mu.Lock()
	if w.ch == ch {
		w.parked.Add(-1)
	}
	w.mu.Unlock()
}

// wake wakes the parked goroutines, if any. The signaller calls it after
// publishing the index change that the waiters wait for.
func (w *waiter) wake() {
	if w.parked.Load() != 0 {
		w.wakeAll()
	}
}

func (w *waiter) wakeAll() {
	w.mu.Lock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
		w.parked.Store(0)
	}
	w.mu.Unlock()
}
