package sluice

import (
	"context"
)

// mapStage starts the n workers of a stage with one input and one output.
// Each builds its body with work, from its sender: the function it runs
// on every input chunk's items, and its call chain (nil: none). Before
// waiting for input a worker flushes its partial output chunk (and dead
// letters).
func mapStage[T, U any](p *Pipeline, s *stage, ie *edge[T], oe *edge[U], work func(i int, w *worker, out *sender[U]) (func(items []T) error, *chain[T])) {
	ie.measured(0)
	s.start(p, func(i int, w *worker) {
		out := newSender(oe, i, w)
		each, ch := work(i, w, out)
		flush := withFlush(out.flush, ch)
		loop(p, s, w, newReceiver(ie, i, w), body[T]{
			each: func(c *chunk[T]) error { return each(c.items) },
			idle: flush,
			end:  flush,
			held: withHeld(out.flushHeld, ch),
		})
	})
}

// apply calls call (see callOf) on each of items, storing the results in
// dst (len(dst) ≥ len(items)). It returns how many results it stored — an
// item settled as failed leaves none — and errStopped or the error that
// fails the pipeline if it stopped early.
func apply[T, U any](p *Pipeline, ctx context.Context, call func(context.Context, T) (U, error), items []T, dst []U) (int, error) {
	dst = dst[:len(items)]
	k := 0
	for _, v := range items {
		if p.halted() {
			return k, errStopped
		}
		switch u, err := call(ctx, v); err {
		case nil:
			dst[k] = u
			k++
		case errDisposed:
		default:
			return k, err
		}
	}
	return k, nil
}

// applyTraced is apply for a pipeline that traces: it also stores each
// result's trace (its input's, which the span step set on w) in dtr. A
// second loop rather than a check in apply's, so that a pipeline without
// Tracing runs apply's loop as it is.
func applyTraced[T, U any](p *Pipeline, ctx context.Context, call func(context.Context, T) (U, error), items []T, dst []U, dtr []context.Context, w *worker) (int, error) {
	dst = dst[:len(items)]
	k := 0
	for _, v := range items {
		if p.halted() {
			return k, errStopped
		}
		switch u, err := call(ctx, v); err {
		case nil:
			dst[k] = u
			dtr[k] = w.trace
			k++
		case errDisposed:
		default:
			return k, err
		}
	}
	return k, nil
}

// Map starts n workers that each take items from in, apply f and send the
// result on. Output order is not input order when n > 1 (see [OrderedMap]);
// with n == 1 it is. The output closes once in is drained and every worker
// has finished. An error from f fails the pipeline unless an error option
// ([SkipErrors], [DeadLetter], [Retry]) settles it.
//
// Cost: one call of f per item plus a store; chunks cross goroutines in
// one channel operation each. Each worker takes a whole input chunk; the
// chunk size adapts to how long f takes, so slow items are spread over the
// workers (see the package documentation).
func Map[T, U any](p *Pipeline, name string, in Stream[T], n int, f func(ctx context.Context, v T) (U, error), opts ...StageOption) Stream[U] {
	defer guard(p)
	s, cfg, ie := openPool(p, kindMap, name, in, n, f == nil, opts)
	oe := newEdge[U](p, s, s.slots(), cfg)
	ic := newItemCalls[T](p, s, cfg.calls)
	ctx := p.ctx
	mapStage(p, s, ie, oe, func(i int, w *worker, out *sender[U]) (func([]T) error, *chain[T]) {
		call, ch := callOf(ic.cs, w, ic.disposalOf(i, w), f)
		if oe.traced {
			return func(items []T) error {
				for len(items) > 0 { // as below, with the results' traces
					dst, dtr := out.space(), out.traceSpace()
					k := min(len(dst), len(items))
					done, err := applyTraced(p, ctx, call, items[:k], dst, dtr, w)
					if !out.commit(done) || err != nil {
						return orStopped(err)
					}
					items = items[k:]
				}
				return nil
			}, ch
		}
		return func(items []T) error {
			// Results go straight into the free part of the output chunk:
			// the per-item work is then one call of f and one store.
			for len(items) > 0 {
				dst := out.space()
				k := min(len(dst), len(items))
				done, err := apply(p, ctx, call, items[:k], dst)
				if !out.commit(done) || err != nil {
					return orStopped(err)
				}
				items = items[k:]
			}
			return nil
		}, ch
	})
	return Stream[U]{oe}
}

// orStopped returns err, or errStopped if err is nil.
func orStopped(err error) error {
	if err == nil {
		return errStopped
	}
	return err
}

// Filter starts n workers that pass on the items for which keep returns
// true; an item it drops is acknowledged (see [Receipt]). Order is kept
// when n == 1. An error from keep fails the pipeline
// unless an error option ([SkipErrors], [DeadLetter], [Retry]) settles it.
func Filter[T any](p *Pipeline, name string, in Stream[T], n int, keep func(ctx context.Context, v T) (bool, error), opts ...StageOption) Stream[T] {
	defer guard(p)
	s, cfg, ie := openPool(p, kindFilter, name, in, n, keep == nil, opts)
	oe := newEdge[T](p, s, s.slots(), cfg)
	ic := newItemCalls[T](p, s, cfg.calls)
	ctx := p.ctx
	rc := receiptsOf[T]()
	mapStage(p, s, ie, oe, func(i int, w *worker, out *sender[T]) (func([]T) error, *chain[T]) {
		call, ch := callOf(ic.cs, w, ic.disposalOf(i, w), keep)
		return func(items []T) error {
			for i, v := range items {
				if p.halted() {
					return errStopped
				}
				ok, err := call(ctx, v)
				switch {
				case err == errDisposed:
					continue
				case err != nil:
					return err
				case !ok:
					if rc != nil {
						rc(&items[i], ack) // dropped: done with
					}
				default:
					out.stamp()
					if !out.send(v) {
						return errStopped
					}
				}
			}
			return nil
		}, ch
	})
	return Stream[T]{oe}
}

// FlatMap starts n workers that call f for each item; f sends any number of
// results through emit, which returns false once the pipeline has stopped
// (f should then return). Order is kept when n == 1. An error from f fails
// the pipeline unless an error option ([SkipErrors], [DeadLetter], [Retry])
// settles it. emit must not be called after f returns. Each result that
// carries a [Receipt] holds it; the input's own hold is acknowledged when
// f returns nil, so a message is settled once all its results are (at
// once when there are none).
func FlatMap[T, U any](p *Pipeline, name string, in Stream[T], n int, f func(ctx context.Context, v T, emit func(U) bool) error, opts ...StageOption) Stream[U] {
	defer guard(p)
	s, cfg, ie := openPool(p, kindFlatMap, name, in, n, f == nil, opts)
	oe := newEdge[U](p, s, s.slots(), cfg)
	ic := newItemCalls[T](p, s, cfg.calls)
	ctx := p.ctx
	rin, rout := receiptsOf[T](), receiptsOf[U]()
	mapStage(p, s, ie, oe, func(i int, w *worker, out *sender[U]) (func([]T) error, *chain[T]) {
		// emit checks the halt flag as the loop does before each call:
		// once the pipeline stops it returns false at once, not only when
		// the chunk fills. A result that carries a receipt holds it
		// before it leaves (see Receipt); only then is u's address taken,
		// which moves u to the heap.
		emit := func(u U) bool {
			if p.halted() {
				return false
			}
			out.stamp()
			return out.send(u)
		}
		if rout != nil {
			emit = func(u U) bool {
				rout(&u, settleOp{hold: 1})
				if p.halted() {
					return false
				}
				out.stamp()
				return out.send(u)
			}
		}
		call, ch := sinkCallOf(ic.cs, w, ic.disposalOf(i, w), func(ctx context.Context, v T) error { return f(ctx, v, emit) })
		return func(items []T) error {
			for i, v := range items {
				if p.halted() {
					return errStopped
				}
				switch err := call(ctx, v); err {
				case nil:
					if rin != nil {
						rin(&items[i], ack) // the input's own hold: its results hold it now
					}
				case errDisposed:
				default:
					return err
				}
			}
			return nil
		}, ch
	})
	return Stream[U]{oe}
}
