package sluice

import (
	"math/bits"
	"runtime"
	"time"
)

// receiver is one consumer goroutine's end of an edge.
type receiver[T any] struct {
	e     *edge[T]
	recvd *counter
	items *counter // items inside the chunks' batches (edge.weigh); nil when the items are not batches
	w     *worker
	order *arrivals // numbers chunks as they are taken, for ordered stages; nil otherwise

	// On an adaptive edge: when the current chunk was taken and the
	// worker's blocked time then (t0 == 0: not measuring), and how many
	// chunks in a row asked for a smaller limit.
	t0, b0  int64
	shrinks int
}

// arrivals numbers the chunks a stage's workers take from one edge, in the
// order they leave the edge; the stage's workers share it. The turn is a
// one-token channel rather than a mutex, so that a worker waiting for it
// can also wait for a stop, and counts as blocked (as testing/synctest
// needs).
type arrivals struct {
	turn chan struct{} // holds the token while no worker is receiving
	next uint64        // guarded by the token
}

func newArrivals() *arrivals {
	a := &arrivals{turn: make(chan struct{}, 1)}
	a.turn <- struct{}{}
	return a
}

func newReceiver[T any](e *edge[T], i int, w *worker) *receiver[T] {
	r := &receiver[T]{e: e, recvd: e.recvd[i], w: w}
	if e.recvdItems != nil {
		r.items = e.recvdItems[i]
	}
	return r
}

// release records the chunk's latency, if it was sampled, tunes the edge's
// chunk size, and recycles the chunk: the stage has finished with it.
func (r *receiver[T]) release(c *chunk[T]) {
	r.finished(c)
	r.e.put(c)
}

// finished ends the stage's work on c without recycling it (a stage that
// passes c on whole).
func (r *receiver[T]) finished(c *chunk[T]) {
	if r.t0 != 0 {
		r.tune(len(c.items))
	}
	if c.born != 0 {
		r.w.lat.record(nowNs() - c.born)
	}
}

// took counts the chunk just taken and, on an adaptive edge, starts
// measuring it.
func (r *receiver[T]) took(c *chunk[T]) {
	r.recvd.add(len(c.items))
	if c.traces != nil {
		r.w.tin, r.w.ti = c.traces, 0
	}
	if r.items != nil {
		r.items.add(int(r.e.weigh(c.items)))
	}
	if r.e.adapt {
		r.t0, r.b0 = nowNs(), r.w.blocked.Load()
	}
}

// tune sets the edge's chunk limit from how long the worker spent on the
// n items of the chunk it took last, not counting its waits: a chunk
// should take about chunkWork. Limits are powers of two (or the edge's
// ceiling). A larger limit is set at once; a smaller one only after four
// chunks in a row asked for it, so that one chunk slowed by preemption or
// a GC assist does not shrink the chunks of a fast stage — or at once after
// a chunk that took a hundred times the budget, which no hiccup explains.
func (r *receiver[T]) tune(n int) {
	busy := nowNs() - r.t0 - (r.w.blocked.Load() - r.b0)
	r.t0 = 0
	if n == 0 {
		return
	}
	want := int64(chunkWork) * int64(n) / max(busy, 1)
	want = min(int64(r.e.ceil), 1<<(bits.Len64(uint64(max(want, 1)))-1))
	cur := r.e.limit.Load()
	switch {
	case want > cur:
		r.e.limit.Store(want)
		r.shrinks = 0
	case want < cur:
		// One chunk far over budget is not preemption: shrink at once.
		if r.shrinks++; r.shrinks >= 4 || busy > 100*chunkWork {
			r.e.limit.Store(want)
			r.shrinks = 0
		}
	default:
		r.shrinks = 0
	}
}

// next returns the next chunk, or nil when the edge is closed and drained,
// the pipeline is stopping, an alarm fired while it waited (rang), or the
// worker was kicked while it waited (kicked: [Auto] may have shed it).
// Before it waits, it calls idle (if not nil): stages pass a function that
// flushes their partial output, which is what keeps latency low when input
// trickles (an ordered stage's worker also calls it before it waits for
// its turn); idle returns false when the pipeline stopped. Then it asks
// alarm (if not nil) for a channel that ends the wait early. The caller
// gives the chunk back with release.
func (r *receiver[T]) next(idle func() bool, alarm func() <-chan time.Time) (c *chunk[T], rang, kicked bool) {
	p := r.e.p
	if r.order != nil {
		if ok, kicked := r.waitTurn(idle); !ok {
			return nil, false, kicked
		}
		defer func() { r.order.turn <- struct{}{} }()
	}
	if p.stopping() {
		return nil, false, false
	}
	select {
	case c = <-r.e.ch:
	default:
		if idle != nil && !idle() {
			return nil, false, false
		}
		// The wait begins before the yields: while this goroutine yields,
		// others run, and their time is not this stage's work (Busy).
		r.w.waitInput()
		if r.e.spinning.CompareAndSwap(false, true) {
			for range spinRounds {
				if len(r.e.ch) > 0 {
					break
				}
				runtime.Gosched()
			}
			r.e.spinning.Store(false)
		}
		var wake <-chan time.Time
		if alarm != nil {
			wake = alarm()
		}
		select {
		case c = <-r.e.ch: // nil once the edge is closed and drained
		case <-p.ctx.Done():
		case <-wake:
			rang = true
		case <-r.w.kick:
			kicked = true
		}
		// The wait ends before the chunk's measurement starts: tune
		// subtracts only the waits within the chunk.
		r.w.resume()
	}
	if c == nil {
		return nil, rang, kicked
	}
	if r.order != nil {
		c.seq = r.order.next
		r.order.next++
	}
	r.took(c)
	return c, false, false
}

// waitTurn waits for the ordered stage's turn to take a chunk: ok once it
// has the turn (the caller passes it on), false when the pipeline stopped
// or the worker was kicked meanwhile.
func (r *receiver[T]) waitTurn(idle func() bool) (ok, kicked bool) {
	select {
	case <-r.order.turn:
		return true, false
	default:
	}
	// Waiting for the turn is waiting for input: hand on what this worker
	// holds first, or it would wait behind a worker that waits for input.
	if idle != nil && !idle() {
		return false, false
	}
	r.w.waitInput()
	defer r.w.resume()
	select {
	case <-r.order.turn:
		return true, false
	case <-r.e.p.ctx.Done():
		return false, false
	case <-r.w.kick:
		return false, true
	}
}
