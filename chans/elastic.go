package chans

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// popSpins is how many times PopMany yields the processor on an empty
// queue before it parks.
const popSpins = 4

// chanBufferBytes sizes the buffers of the In and Out channels (4096 slots
// of 8 bytes): big enough that the producer, the goroutine between the ends
// and the consumer each run long stretches between parks, taking turns on a
// CPU rather than contending for a channel's lock value by value (seed 001's
// loop with ends this size is much faster than with its 128-slot ends; see
// BenchmarkElasticVersus), small enough to matter little next to the queue.
const chanBufferBytes = 32 << 10

// chanBuffer returns the number of slots of the In and Out channels:
// chanBufferBytes worth of T, between 16 and 4096, and no more than the
// limit if there is one.
func chanBuffer[T any](limit int) int {
	var zero T
	n := 4096
	if size := int(unsafe.Sizeof(zero)); size > 0 {
		n = min(max(chanBufferBytes/size, 16), 4096)
	}
	if limit > 0 {
		n = min(n, limit)
	}
	return n
}

// Elastic is a FIFO queue with no fixed bound, usable through methods (Push,
// Pop, PopMany) or as a channel (In, Out). Make one with NewElastic; the zero
// value is not usable. All methods are safe for concurrent use. For a plain
// unbounded channel, ElasticChan is simpler (no methods to misuse, no lock)
// and costs about the same through In and Out, a little less when a
// producer fills it before a consumer drains it.
//
// There is one queue and one input. Values enter by Push, which queues at
// once, or by a send on In, which queues once Elastic's goroutine has
// received it. Values leave by Pop or PopMany, which take from the queue, or
// by a receive from Out, which Elastic's goroutine feeds from the queue once
// Out has been called. Each value leaves exactly once, in the order it was
// queued, except that what Out's buffer already holds is behind the queue: a
// value Pop takes can be newer than one still waiting in Out. With one way in
// and one way out the order is plain FIFO.
//
// The input ends when In is closed: the goroutine queues what In still
// holds, and once the queue is empty Out is closed and Pop returns ErrClosed.
// Push after that panics, like a send on a closed channel. Close stops
// everything at once instead.
//
// Elastic starts one goroutine, on the first call to In or Out, never
// otherwise. It returns when the input has ended and the queue has been
// emptied, or when Close is called. Memory: the queued values plus at most
// two blocks of the initial capacity (the queue is a list of such blocks,
// linked as it grows and dropped as it drains, so an empty Elastic holds
// two blocks at most), plus, once In or Out has been called, In's and Out's
// buffers (32 KiB worth each). Cost per value: through the methods, an
// uncontended mutex round trip for Push (BenchmarkElasticPushAlone) and a
// share of one for PopMany; through the channels, four channel operations
// (the goroutine's receive and send come on top of the caller's) and a
// share of one mutex round trip and one select per run of values the
// goroutine moves: up to about twice a plain buffered channel's per value,
// and no more than seed 001's relay with ends of the same size
// (BenchmarkElasticVersus).
type Elastic[T any] struct {
	mu     sync.Mutex
	q      queue[T]
	cfg    elasticConfig
	held   int  // values the goroutine has taken from q and not yet sent on out
	outOn  bool // Out has been called: the goroutine feeds out
	ended  bool // the goroutine saw In closed
	closed bool // Close was called

	popWaiters  int
	popReady    chan struct{} // buffered 1: a value is there for a waiting Pop
	pushWaiters int
	pushReady   chan struct{} // buffered 1: there is room for a waiting Push
	pumpWake    chan struct{} // buffered 1: the goroutine has something to do
	closing     chan struct{} // closed by Close
	inputDone   chan struct{} // closed by the pump when it sees In closed
	pumping     bool          // the pump holds mu (so needs no wake token)

	started  atomic.Bool
	in, out  chan T
	pumpDone chan struct{}

	dropped atomic.Uint64
}

// defaultCapacity is 4 KiB worth of T, between 16 and 512 values: blocks
// big enough that linking one (an allocation) is rare next to the values
// that fill it, small enough that an idle Elastic costs little.
func defaultCapacity[T any]() int {
	var zero T
	if size := int(unsafe.Sizeof(zero)); size > 0 {
		return min(max(4096/size, minBlock), 512)
	}
	return 512
}

// NewElastic returns an empty Elastic. It starts no goroutine (see In and
// Out). It panics on a nil option, or when WithCapacity's blocks are too
// large for one allocation.
func NewElastic[T any](opts ...ElasticOption) *Elastic[T] {
	cfg := elasticConfig{capacity: defaultCapacity[T]()}
	for i, o := range opts {
		if o == nil {
			panic(fmt.Sprintf("chans: nil ElasticOption at index %d passed to NewElastic", i))
		}
		o.apply(&cfg)
	}
	checkFits[T]("Elastic", cfg.capacity)
	return &Elastic[T]{
		q:         newQueue[T](cfg.capacity),
		cfg:       cfg,
		popReady:  make(chan struct{}, 1),
		pushReady: make(chan struct{}, 1),
		pumpWake:  make(chan struct{}, 1),
		closing:   make(chan struct{}),
		inputDone: make(chan struct{}),
	}
}

// In returns the channel to send values on; close it to end the input. A
// send blocks only while In's buffer (32 KiB worth of values, 16 to 4096,
// and no more than the limit if there is one; Out's is the same size) is
// full: with no limit the goroutine keeps emptying it; with a Block limit it
// stops while the queue is full. (A value the goroutine receives just as a
// Push fills the queue still joins it: with both Push and In in use, a
// Block-limited queue can hold one value more than its limit.) After Close
// nothing receives from In any more. The first call to In or Out starts
// Elastic's goroutine.
func (e *Elastic[T]) In() chan<- T {
	e.start()
	return e.in
}

// Out returns the channel to receive values from. It is closed once the
// input has ended and every value has been delivered, or on Close. Until Out
// is first called the goroutine does not feed it, so values wait in the
// queue for Pop. The first call to In or Out starts Elastic's goroutine.
func (e *Elastic[T]) Out() <-chan T {
	e.start()
	e.mu.Lock()
	if !e.outOn {
		e.outOn = true
		e.wakePump()
	}
	e.mu.Unlock()
	return e.out
}

// Len returns how many values are in Elastic: queued, or in In's or Out's
// buffer, or held by its goroutine between the two. It is a snapshot for
// metrics that never overstates: while the goroutine moves values it can
// miss those in transit, and while it waits to hand a value to a full Out it
// does not count that one. With In and Out unused it is exact. After Close
// it counts only what Out still holds: In's buffer will never be received.
func (e *Elastic[T]) Len() int {
	// Values flow In → queue → Out, so the parts are read downstream
	// first: a value that moves while Len reads is missed at worst, never
	// counted twice. (Reading the queue first counted every value the
	// goroutine moved to Out meanwhile a second time.)
	started := e.started.Load()
	n := 0
	if started {
		n = len(e.out)
	}
	e.mu.Lock()
	n += e.q.len() + e.held
	closed := e.closed
	e.mu.Unlock()
	if started && !closed {
		n += len(e.in)
	}
	return n
}

// Dropped returns how many values the limit's policy has discarded.
func (e *Elastic[T]) Dropped() uint64 { return e.dropped.Load() }

// Push queues v and reports whether it did. It never blocks unless a Block
// limit is set and the queue is full; then it waits for room. It returns
// false when DropNewest discards v at the limit, or after Close. It panics
// once the input has ended, like a send on a closed channel: once Elastic's
// goroutine has received In's close, after the values In still held (until
// then Push queues v as usual, ahead of those values). Cost: one uncontended mutex round trip, plus a wakeup when a receiver was
// waiting on an empty queue.
func (e *Elastic[T]) Push(v T) bool {
	e.mu.Lock()
	if e.closed || e.ended || e.cfg.limit > 0 {
		return e.pushSlow(v)
	}
	e.q.push(v)
	if e.q.len() == 1 {
		e.valueReadyLocked()
	}
	e.mu.Unlock()
	return true
}

// PushMany queues the values of vs in order, as Push would one by one, and
// returns how many it queued: fewer than len(vs) only when DropNewest
// discards some at the limit, or after Close. It panics once the input has
// ended. With no limit it takes the mutex once for the whole batch, so it
// costs a few nanoseconds per value: the way to feed an Elastic from a
// producer that has values in hand in batches.
func (e *Elastic[T]) PushMany(vs ...T) int {
	e.mu.Lock()
	if e.closed || e.ended || e.cfg.limit > 0 {
		e.mu.Unlock()
		n := 0
		for _, v := range vs {
			if e.Push(v) {
				n++
			}
		}
		return n
	}
	wasEmpty := e.q.len() == 0
	e.q.pushAll(vs)
	if wasEmpty && e.q.len() > 0 {
		e.valueReadyLocked()
	}
	e.mu.Unlock()
	return len(vs)
}

// pushSlow is Push when it is closed, ended or limited; it unlocks mu.
func (e *Elastic[T]) pushSlow(v T) bool {
	for {
		if e.closed {
			e.mu.Unlock()
			return false
		}
		if e.ended {
			e.mu.Unlock()
			panic("chans: Push on Elastic after its In channel was closed")
		}
		if e.q.len() < e.cfg.limit || e.cfg.policy != Block {
			break
		}
		e.pushWaiters++
		e.mu.Unlock()
		select {
		case <-e.pushReady:
		case <-e.closing:
		case <-e.inputDone:
		}
		e.mu.Lock()
		e.pushWaiters--
	}
	ok := e.queueLocked(v)
	if e.pushWaiters > 0 && e.q.len() < e.cfg.limit {
		select { // pass the room-available hint on
		case e.pushReady <- struct{}{}:
		default:
		}
	}
	e.mu.Unlock()
	return ok
}

// queueLocked adds v under the limit's policy, wakes whoever waits for a
// value, and reports whether v was queued.
func (e *Elastic[T]) queueLocked(v T) bool {
	if e.cfg.limit > 0 && e.q.len() >= e.cfg.limit {
		switch e.cfg.policy {
		case DropNewest:
			e.dropped.Add(1)
			return false
		case DropOldest:
			e.q.pop()
			e.dropped.Add(1)
		}
	}
	e.q.push(v)
	if e.q.len() == 1 {
		e.valueReadyLocked()
	}
	return true
}

// valueReadyLocked tells a waiting Pop, or the goroutine feeding Out, that
// the queue is no longer empty. Waiters recheck under mu, so a token is only
// a hint and a spare one is harmless.
func (e *Elastic[T]) valueReadyLocked() {
	if e.popWaiters > 0 {
		select {
		case e.popReady <- struct{}{}:
		default:
		}
	}
	if e.outOn {
		e.wakePump()
	}
}

// wakePump leaves the pump a token unless it is the caller. Only the pump
// sets pumping, under mu, so wakePump must be called with mu held.
func (e *Elastic[T]) wakePump() {
	if e.pumping {
		return
	}
	select {
	case e.pumpWake <- struct{}{}:
	default:
	}
}

// Close stops the Elastic at once: queued values are discarded (not counted
// as dropped), Out is closed after what its buffer holds, waiting Pop and
// Push calls return, later ones return ErrClosed or false, and nothing
// receives from In any more (stop sending on it; a send blocks once its
// buffer is full). Close waits for Elastic's goroutine to return. Calling it
// more than once is harmless.
func (e *Elastic[T]) Close() {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.closing)
		e.q.reset()
		e.held = 0 // discarded with the queue; the goroutine never sends it
	}
	started := e.started.Load()
	e.mu.Unlock()
	if started {
		<-e.pumpDone
	}
}
