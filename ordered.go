package sluice

import (
	"context"
	"sync"
)

// OrderedMap is [Map] that keeps input order: n workers apply f
// concurrently, and results leave in the order their inputs arrived.
//
// Workers take chunks of input in turn; a chunk's results wait in a
// reorder buffer until every earlier chunk's results have left. The items
// between being taken and leaving are bounded by [Reorder] (default: four
// full chunks per worker): a worker whose chunk would pass the window waits
// until earlier results leave, unless its chunk is the next to leave. The
// input's chunks adapt to f's cost as in [Map], but stay small enough that
// the window holds two per worker, and no larger than the output's chunks
// ([Chunk], [Buffer]). Results leave in chunks of the size the next stage
// asks for, as any stage's do: a larger chunk of results is split. An
// error from f fails the pipeline unless an error option ([SkipErrors],
// [DeadLetter], [Retry]) settles it.
func OrderedMap[T, U any](p *Pipeline, name string, in Stream[T], n int, f func(ctx context.Context, v T) (U, error), opts ...StageOption) Stream[U] {
	defer guard(p)
	s, cfg, ie := openPool(p, kindOrderedMap, name, in, n, f == nil, opts)
	oe := newEdge[U](p, s, s.slots(), cfg)
	window := 4 * s.slots() * ie.size
	if cfg.setReorder {
		window = cfg.reorder
	}
	// One output chunk per input chunk: an input chunk no larger than the
	// output's chunks needs no splitting unless the consumer asks for
	// smaller ones (see handoffSized).
	ie.measured(max(1, min(window/(2*s.slots()), oe.size)))
	ic := newItemCalls[T](p, s, cfg.calls)
	ro := &reorder[U]{window: window, slots: make(map[uint64]deposit[U]), room: make(chan struct{})}
	order := newArrivals()
	ctx := p.ctx
	s.start(p, func(i int, w *worker) {
		r := newReceiver(ie, i, w)
		r.order = order
		out := newPassSender(oe, i, w)
		call, ch := callOf(ic.cs, w, ic.disposalOf(i, w), f)
		flush := withFlush(nil, ch)
		loop(p, s, w, r, body[T]{idle: flush, end: flush, held: withHeld(nil, ch), each: func(c *chunk[T]) error {
			if !ro.admit(p, w, c.seq, len(c.items)) {
				return errStopped
			}
			// One output chunk per input chunk, whatever the output
			// edge's chunk size, so that order is kept chunk by chunk.
			oc := oe.get()
			if cap(oc.items) < len(c.items) {
				oc.items = make([]U, 0, len(c.items))
			}
			var dtr []context.Context // the results' traces, when the pipeline traces
			if oc.traces != nil {
				if cap(oc.traces) < len(c.items) {
					oc.traces = make([]context.Context, 0, len(c.items))
				}
				dtr = oc.traces[:len(c.items)]
			}
			dst := oc.items[:len(c.items)]
			clear(dst) // take its cache lines here at once (see sender.take)
			var k int
			var err error
			if dtr == nil {
				k, err = apply(p, ctx, call, c.items, dst)
			} else {
				k, err = applyTraced(p, ctx, call, c.items, dst, dtr, w)
			}
			if err != nil {
				oe.put(oc)
				return err
			}
			oc.items, oc.seq = dst[:k], c.seq
			if dtr != nil {
				oc.traces = dtr[:k]
			}
			if !ro.deposit(oc, len(c.items), out) {
				return errStopped
			}
			return nil
		}})
	})
	return Stream[U]{oe}
}

// handoffSized hands c on through out in chunks of at most the output
// edge's chunk limit: the size its consumer asks for (slow items spread
// over its workers), never more than the output's [Chunk] or [Buffer] —
// even when an input chunk was larger (its producer's Chunk fixed it, or
// this stage's items are cheaper than the next stage's). Like handoff, it
// returns false when the pipeline stopped, and the caller then still owns
// c.
func handoffSized[U any](out *sender[U], c *chunk[U]) bool {
	e := out.e
	if len(c.items) <= e.chunkLimit() {
		return out.handoff(c)
	}
	trs := c.traces
	for items := c.items; len(items) > 0; {
		k := min(len(items), e.chunkLimit())
		pc := e.get()
		pc.items = append(pc.items[:0], items[:k]...)
		items = items[k:]
		if trs != nil {
			pc.traces = append(pc.traces[:0], trs[:k]...)
			trs = trs[k:]
		}
		if !out.handoff(pc) {
			e.put(pc)
			return false
		}
	}
	e.put(c)
	return true
}

// reorder lets output chunks leave in the order their inputs arrived, and
// bounds the items between arrival and leaving.
type reorder[U any] struct {
	mu       sync.Mutex
	window   int                   // most items admitted and not yet left (one chunk may pass it)
	inflight int                   // items admitted and not yet left
	waiting  int                   // workers waiting in admit
	room     chan struct{}         // closed (and replaced) when inflight falls while some wait
	slots    map[uint64]deposit[U] // deposited chunks not yet left, by seq
	nextOut  uint64                // seq of the next chunk to leave
	emitting bool                  // one worker at a time sends, so sends happen in seq order
}

// deposit is a chunk of results waiting for its turn to leave, with the
// items admitted for it (more than it holds when some failed).
type deposit[U any] struct {
	c        *chunk[U]
	admitted int
}

// admit waits until the n items of input chunk seq fit in the window, or
// seq is the next to leave (which must go on, or every worker could wait
// for it). It returns false when the pipeline stopped.
func (ro *reorder[U]) admit(p *Pipeline, w *worker, seq uint64, n int) bool {
	ro.mu.Lock()
	for ro.inflight > 0 && ro.inflight+n > ro.window && seq != ro.nextOut {
		ro.waiting++
		room := ro.room
		ro.mu.Unlock()
		w.waitRoom()
		select {
		case <-room:
		case <-p.ctx.Done():
		}
		w.resume()
		ro.mu.Lock()
		ro.waiting--
		if p.stopping() {
			ro.mu.Unlock()
			return false
		}
	}
	ro.inflight += n
	ro.mu.Unlock()
	return true
}

// deposit hands over the output chunk c, whose input had admitted items.
// If c is the next to leave, the caller sends it, and every chunk queued
// behind it, through out; an empty chunk (every item failed) is recycled
// instead. It returns false when the pipeline stopped.
func (ro *reorder[U]) deposit(c *chunk[U], admitted int, out *sender[U]) bool {
	ro.mu.Lock()
	ro.slots[c.seq] = deposit[U]{c, admitted}
	if ro.emitting {
		ro.mu.Unlock()
		return true
	}
	ro.emitting = true
	for {
		next, ok := ro.slots[ro.nextOut]
		if !ok {
			break
		}
		delete(ro.slots, ro.nextOut)
		ro.mu.Unlock()
		n, sent := next.admitted, true
		if len(next.c.items) > 0 {
			sent = handoffSized(out, next.c)
		} else {
			out.e.put(next.c)
		}
		ro.mu.Lock()
		if !sent {
			out.e.put(next.c)
			ro.emitting = false
			ro.mu.Unlock()
			return false
		}
		ro.nextOut++
		ro.inflight -= n
		if ro.waiting > 0 {
			close(ro.room)
			ro.room = make(chan struct{})
		}
	}
	ro.emitting = false
	ro.mu.Unlock()
	return true
}
