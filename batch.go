package sluice

import (
	"fmt"
	"time"
)

// Batch starts a one-goroutine stage that groups the items of in, in order,
// into slices of at most size items. A batch leaves when it is full, when
// maxWait has passed since its first item arrived, or when in is drained;
// an empty batch never leaves. maxWait == 0 means no time limit. Each batch
// is a new slice that the receiver owns.
//
// Batches are handed on one at a time (the output edge's chunk size is 1
// unless [Chunk] says otherwise), so a batch is never held back behind the
// next; the output edge holds max(1, 2048/size) batches unless [Buffer]
// says otherwise. The time limit is checked when a chunk of input arrives
// and by a timer while the input is idle; a batch may leave up to the
// processing time of one input chunk after maxWait.
func Batch[T any](p *Pipeline, name string, in Stream[T], size int, maxWait time.Duration, opts ...StageOption) Stream[[]T] {
	if size < 1 {
		panic(fmt.Sprintf("sluice: Batch %q: size must be ≥ 1, got %d", name, size))
	}
	if maxWait < 0 {
		panic(fmt.Sprintf("sluice: Batch %q: maxWait must be ≥ 0, got %v", name, maxWait))
	}
	// By default the output holds about 2048 items' worth of batches,
	// handed on one at a time.
	cfg := stageOptions(append([]StageOption{Chunk(1), Buffer(max(1, 2048/size))}, opts...))
	s := newStage(p, "batch", name, 1)
	ie := consume(p, s, in, 1)
	ie.unmeasured()
	oe := newEdge[[]T](p, s, 1, cfg)
	w := s.workers[0]
	r := newReceiver(ie, 0, w)
	out := newSender(oe, 0, w)
	done := p.ctx.Done()

	p.goStage(s, w, func() error {
		var batch []T
		var started time.Time // arrival of the batch's first item
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		defer timer.Stop()
		emit := func() bool {
			ok := out.send(batch)
			batch = nil
			return ok
		}
		for {
			var c *chunk[T]
			var ok bool
			select {
			case c, ok = <-ie.ch:
			default:
				if !out.flush() {
					return p.cause()
				}
				var expired <-chan time.Time
				if len(batch) > 0 && maxWait > 0 {
					timer.Reset(maxWait - time.Since(started))
					expired = timer.C
				}
				w.waitInput()
				select {
				case c, ok = <-ie.ch:
				case <-expired:
					w.resume()
					if !emit() || !out.flush() {
						return p.cause()
					}
					continue
				case <-done:
				}
				w.resume()
				timer.Stop()
			}
			if p.stopped() {
				return p.cause()
			}
			if !ok {
				break
			}
			r.recvd.add(len(c.items))
			for _, v := range c.items {
				if batch == nil {
					batch = make([]T, 0, size)
					started = time.Now()
				}
				batch = append(batch, v)
				if len(batch) == size && !emit() {
					r.release(c)
					return p.cause()
				}
			}
			r.release(c)
			if len(batch) > 0 && maxWait > 0 && time.Since(started) >= maxWait && !emit() {
				return p.cause()
			}
		}
		if len(batch) > 0 && !emit() {
			return p.cause()
		}
		return p.finish(out)
	})
	return Stream[[]T]{oe}
}

// Unbatch starts a one-goroutine stage that sends on every item of every
// slice of in, in order.
func Unbatch[T any](p *Pipeline, name string, in Stream[[]T], opts ...StageOption) Stream[T] {
	s := newStage(p, "unbatch", name, 1)
	ie := consume(p, s, in, 1)
	oe := newEdge[T](p, s, 1, stageOptions(opts))
	runChunks(p, s, ie, oe, func(items [][]T, out *sender[T]) error {
		for _, b := range items {
			for _, v := range b {
				if !out.send(v) {
					return errStopped
				}
			}
		}
		return nil
	})
	return Stream[T]{oe}
}
