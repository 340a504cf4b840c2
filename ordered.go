package sluice

import (
	"context"
	"fmt"
	"sync"
)

// OrderedMap is [Map] that keeps input order: n workers apply f
// concurrently, and results leave in the order their inputs arrived.
//
// Workers take whole chunks of input in turn; a chunk's results wait in a
// reorder buffer until every earlier chunk's results have left. The buffer
// is bounded by [Window] (default: four chunks per worker): a worker that
// runs that far ahead of the slowest one waits for it. An error from f
// fails the pipeline.
func OrderedMap[T, U any](p *Pipeline, name string, in Stream[T], n int, f func(ctx context.Context, v T) (U, error), opts ...StageOption) Stream[U] {
	checkWorkers("OrderedMap", name, n)
	if f == nil {
		panic(fmt.Sprintf("sluice: OrderedMap %q: nil function", name))
	}
	cfg := stageOptions(opts)
	s := newStage(p, "ordered-map", name, n)
	ie := consume(p, s, in, n)
	oe := newEdge[U](p, s, n, cfg)
	window := 4 * n
	if cfg.setWindow {
		window = max(1, (cfg.window+ie.size-1)/ie.size)
	}
	ro := &reorder[T, U]{slots: make([]*chunk[U], window), free: make(chan struct{}, window)}
	for range window {
		ro.free <- struct{}{}
	}
	ie.measured()
	ctx := p.ctx
	for i, w := range s.workers {
		r := newReceiver(ie, i, w)
		out := newSender(oe, i, w)
		p.goStage(s, w, func() error {
			for {
				c, seq := ro.take(p, r)
				if c == nil {
					break
				}
				// One output chunk per input chunk, whatever the output
				// edge's chunk size, so that order is kept chunk by chunk.
				oc := oe.get()
				if cap(oc.items) < len(c.items) {
					oc.items = make([]U, 0, len(c.items))
				}
				dst := oc.items[:len(c.items)]
				clear(dst) // take its cache lines here at once (see sender.take)
				for i, v := range c.items {
					if p.halted() {
						r.release(c)
						return p.cause()
					}
					u, err := f(ctx, v)
					if err != nil {
						r.release(c)
						return wrap(s, err)
					}
					dst[i] = u
				}
				oc.items = dst
				r.release(c)
				oc.seq = seq
				if !ro.deposit(oc, out) {
					return p.cause()
				}
			}
			if p.stopped() {
				return p.cause()
			}
			return nil
		})
	}
	return Stream[U]{oe}
}

// reorder numbers input chunks as workers take them and lets output chunks
// leave in that order.
type reorder[T, U any] struct {
	// free holds one token per slot of the window. A worker takes a token
	// before it takes an input chunk and the token returns when that
	// chunk's output has left, so at most len(slots) chunks are between
	// take and emit, and slot seq%len(slots) is free when seq is deposited.
	free chan struct{}

	takeMu sync.Mutex // makes "receive a chunk, number it" one step
	nextIn uint64

	mu       sync.Mutex // guards slots, nextOut and emitting
	slots    []*chunk[U]
	nextOut  uint64
	emitting bool // one worker at a time sends, so sends happen in seq order
}

// take returns the next input chunk and its sequence number, or nil when
// the input is drained or the pipeline stopped.
func (ro *reorder[T, U]) take(p *Pipeline, r *receiver[T]) (*chunk[T], uint64) {
	select {
	case <-ro.free:
	default:
		r.w.waitRoom()
		select {
		case <-ro.free:
		case <-p.ctx.Done():
		}
		r.w.resume()
		if p.stopped() {
			return nil, 0
		}
	}
	ro.takeMu.Lock()
	c := r.next(nil)
	seq := ro.nextIn
	ro.nextIn++
	ro.takeMu.Unlock()
	if c == nil {
		ro.free <- struct{}{}
		return nil, 0
	}
	return c, seq
}

// deposit hands over the output chunk c. If c is the next to leave, the
// caller sends it, and every chunk queued behind it, through out. It
// returns false when the pipeline stopped.
func (ro *reorder[T, U]) deposit(c *chunk[U], out *sender[U]) bool {
	ro.mu.Lock()
	ro.slots[c.seq%uint64(len(ro.slots))] = c
	if ro.emitting {
		ro.mu.Unlock()
		return true
	}
	ro.emitting = true
	for {
		i := ro.nextOut % uint64(len(ro.slots))
		next := ro.slots[i]
		if next == nil {
			break
		}
		ro.slots[i] = nil
		ro.nextOut++
		ro.mu.Unlock()
		ok := out.handoff(next)
		ro.free <- struct{}{}
		ro.mu.Lock()
		if !ok {
			ro.emitting = false
			ro.mu.Unlock()
			return false
		}
	}
	ro.emitting = false
	ro.mu.Unlock()
	return true
}
