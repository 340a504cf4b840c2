package sluice

import (
	"context"
	"fmt"
)

// errStopped tells runChunks that the pipeline stopped while a chunk was
// being processed.
var errStopped = fmt.Errorf("sluice: stopped")

// runChunks starts the n workers of a one-input, one-output stage. Each
// worker takes chunks from ie and calls body with its items and the
// worker's own sender into oe; body returns a stage error, errStopped, or
// nil. Before waiting for input a worker flushes its partial output chunk.
func runChunks[T, U any](p *Pipeline, s *stage, ie *edge[T], oe *edge[U], body func(items []T, out *sender[U]) error) {
	ie.measured()
	for i, w := range s.workers {
		r := newReceiver(ie, i, w)
		out := newSender(oe, i, w)
		p.goStage(s, w, func() error {
			idle := out.flush
			for {
				c := r.next(idle)
				if c == nil {
					break
				}
				err := body(c.items, out)
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
			return p.finish(out)
		})
	}
}

// Map starts n workers that each take items from in, apply f and send the
// result on. Output order is not input order when n > 1 (see [OrderedMap]);
// with n == 1 it is. The output closes once in is drained and every worker
// has finished. An error from f fails the pipeline.
//
// Cost: one call of f per item plus a store; chunks cross goroutines in
// one channel operation each. Each worker takes a whole input chunk; the
// chunk size adapts to how long f takes, so slow items are spread over the
// workers (see the package documentation).
func Map[T, U any](p *Pipeline, name string, in Stream[T], n int, f func(ctx context.Context, v T) (U, error), opts ...StageOption) Stream[U] {
	checkWorkers("Map", name, n)
	if f == nil {
		panic(fmt.Sprintf("sluice: Map %q: nil function", name))
	}
	s := newStage(p, "map", name, n)
	ie := consume(p, s, in, n)
	oe := newEdge[U](p, s, n, stageOptions(opts))
	ctx := p.ctx
	runChunks(p, s, ie, oe, func(items []T, out *sender[U]) error {
		// Write results straight into the free part of the output chunk:
		// the per-item work is then one call of f and one store.
		for len(items) > 0 {
			dst := out.space()
			k := min(len(dst), len(items))
			for i, v := range items[:k] {
				if p.halted() {
					out.commit(i)
					return errStopped
				}
				u, err := f(ctx, v)
				if err != nil {
					out.commit(i)
					return err
				}
				dst[i] = u
			}
			items = items[k:]
			if !out.commit(k) {
				return errStopped
			}
		}
		return nil
	})
	return Stream[U]{oe}
}

// Filter starts n workers that pass on the items for which keep returns
// true. Order is kept when n == 1. An error from keep fails the pipeline.
func Filter[T any](p *Pipeline, name string, in Stream[T], n int, keep func(ctx context.Context, v T) (bool, error), opts ...StageOption) Stream[T] {
	checkWorkers("Filter", name, n)
	if keep == nil {
		panic(fmt.Sprintf("sluice: Filter %q: nil function", name))
	}
	s := newStage(p, "filter", name, n)
	ie := consume(p, s, in, n)
	oe := newEdge[T](p, s, n, stageOptions(opts))
	ctx := p.ctx
	runChunks(p, s, ie, oe, func(items []T, out *sender[T]) error {
		for _, v := range items {
			if p.halted() {
				return errStopped
			}
			ok, err := keep(ctx, v)
			if err != nil {
				return err
			}
			if ok && !out.send(v) {
				return errStopped
			}
		}
		return nil
	})
	return Stream[T]{oe}
}

// FlatMap starts n workers that call f for each item; f sends any number of
// results through emit, which returns false once the pipeline has stopped
// (f should then return). Order is kept when n == 1. An error from f fails
// the pipeline.
func FlatMap[T, U any](p *Pipeline, name string, in Stream[T], n int, f func(ctx context.Context, v T, emit func(U) bool) error, opts ...StageOption) Stream[U] {
	checkWorkers("FlatMap", name, n)
	if f == nil {
		panic(fmt.Sprintf("sluice: FlatMap %q: nil function", name))
	}
	s := newStage(p, "flat-map", name, n)
	ie := consume(p, s, in, n)
	oe := newEdge[U](p, s, n, stageOptions(opts))
	ctx := p.ctx
	runChunks(p, s, ie, oe, func(items []T, out *sender[U]) error {
		emit := out.send
		for _, v := range items {
			if p.halted() {
				return errStopped
			}
			if err := f(ctx, v, emit); err != nil {
				return err
			}
		}
		return nil
	})
	return Stream[U]{oe}
}
