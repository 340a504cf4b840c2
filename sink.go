package sluice

import (
	"context"
	"fmt"
)

// runSink starts the n workers of a sink; each calls body with the items of
// every chunk it takes from ie. With adapt, the workers time their chunks
// and tune ie's chunk size (see receiver.tune); otherwise ie carries full
// chunks.
func runSink[T any](p *Pipeline, s *stage, ie *edge[T], adapt bool, body func(worker int, items []T) error) {
	if adapt {
		ie.measured()
	} else {
		ie.unmeasured()
	}
	for i, w := range s.workers {
		r := newReceiver(ie, i, w)
		p.goStage(s, w, func() error {
			for {
				c := r.next(nil)
				if c == nil {
					break
				}
				err := body(i, c.items)
				r.release(c)
				if err == errStopped {
					return p.cause()
				}
				if err != nil {
					return wrap(s, err)
				}
			}
			if p.stopped() {
				return p.cause()
			}
			return nil
		})
	}
}

// ForEach starts a sink of n workers that call f for every item of in, in
// no particular order when n > 1. An error from f fails the pipeline.
func ForEach[T any](p *Pipeline, name string, in Stream[T], n int, f func(ctx context.Context, v T) error) {
	checkWorkers("ForEach", name, n)
	if f == nil {
		panic(fmt.Sprintf("sluice: ForEach %q: nil function", name))
	}
	s := newStage(p, "sink", name, n)
	ie := consume(p, s, in, n)
	ctx := p.ctx
	runSink(p, s, ie, true, func(_ int, items []T) error {
		for _, v := range items {
			if p.halted() {
				return errStopped
			}
			if err := f(ctx, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// ForEachChunk starts a sink of n workers that call f with the items of
// each chunk as it arrives: as many as were ready, up to the producer's
// chunk size — one item when input trickles, full chunks under load. It is
// the natural-batching sink for destinations that prefer batches (a bulk
// insert, a batched publish) but should not wait for a batch to fill: no
// timer is involved. Its input's chunks do not adapt to how long f takes
// (a call's cost is mostly per batch, and smaller chunks would only mean
// more calls): they are full-size, [DefaultChunk] unless the producer's
// [Chunk] says otherwise. items is valid only during the call; f must copy what
// it keeps. An error from f fails the pipeline.
func ForEachChunk[T any](p *Pipeline, name string, in Stream[T], n int, f func(ctx context.Context, items []T) error) {
	checkWorkers("ForEachChunk", name, n)
	if f == nil {
		panic(fmt.Sprintf("sluice: ForEachChunk %q: nil function", name))
	}
	s := newStage(p, "sink", name, n)
	ie := consume(p, s, in, n)
	ctx := p.ctx
	runSink(p, s, ie, false, func(_ int, items []T) error {
		if p.halted() {
			return errStopped
		}
		return f(ctx, items)
	})
}

// Result is the value a sink computes. Read it with Value once the pipeline
// is done.
type Result[T any] struct {
	v    T
	done chan struct{}
}

// Value waits until the sink has finished — its input drained, or the
// pipeline stopped — and returns what it computed. After a failed or
// cancelled pipeline the value covers only the items that arrived; check
// [Pipeline.Wait]'s error before trusting it.
func (r *Result[T]) Value() T {
	<-r.done
	return r.v
}

// Reduce starts a one-goroutine sink that folds the items of in, in order,
// into an accumulator that starts at init.
func Reduce[T, A any](p *Pipeline, name string, in Stream[T], init A, f func(acc A, v T) A) *Result[A] {
	if f == nil {
		panic(fmt.Sprintf("sluice: Reduce %q: nil function", name))
	}
	s := newStage(p, "reduce", name, 1)
	ie := consume(p, s, in, 1)
	res := &Result[A]{v: init, done: make(chan struct{})}
	p.onStageDone(s, func() { close(res.done) })
	runSink(p, s, ie, true, func(_ int, items []T) error {
		acc := res.v
		for _, v := range items {
			if p.halted() {
				res.v = acc
				return errStopped
			}
			acc = f(acc, v)
		}
		res.v = acc
		return nil
	})
	return res
}

// Collect starts a one-goroutine sink that gathers every item of in, in
// order, into a slice.
func Collect[T any](p *Pipeline, name string, in Stream[T]) *Result[[]T] {
	s := newStage(p, "collect", name, 1)
	ie := consume(p, s, in, 1)
	res := &Result[[]T]{done: make(chan struct{})}
	p.onStageDone(s, func() { close(res.done) })
	runSink(p, s, ie, true, func(_ int, items []T) error {
		res.v = append(res.v, items...)
		return nil
	})
	return res
}

// ToChan starts a one-goroutine sink that sends every item of in on the
// returned unbuffered channel, which closes when in is drained or the
// pipeline stops. The caller must receive until the channel closes, or
// cancel the pipeline: otherwise the stage waits for it forever.
func ToChan[T any](p *Pipeline, name string, in Stream[T]) <-chan T {
	s := newStage(p, "to-chan", name, 1)
	ie := consume(p, s, in, 1)
	ch := make(chan T)
	done := p.ctx.Done()
	w := s.workers[0]
	p.onStageDone(s, func() { close(ch) })
	runSink(p, s, ie, true, func(_ int, items []T) error {
		for _, v := range items {
			select {
			case ch <- v:
				continue
			default:
			}
			w.waitRoom()
			select {
			case ch <- v:
			case <-done:
				w.resume()
				return errStopped
			}
			w.resume()
		}
		return nil
	})
	return ch
}
