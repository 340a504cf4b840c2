package sluice

import (
	"context"
	"fmt"
)

// mapStage starts the n workers of a stage with one input and one output;
// each runs each on every input chunk's items with its own sender and its
// end of the stage's error policy. Before waiting for input a worker
// flushes its partial output chunk (and dead letters).
func mapStage[T, U any](p *Pipeline, s *stage, ie *edge[T], oe *edge[U], pol *policy[T], each func(items []T, out *sender[U], h *onError[T]) error) {
	ie.measured(0)
	s.start(p, func(i int, w *worker) {
		out := newSender(oe, i, w)
		h := pol.worker(i, w)
		flush := withFlush(out.flush, h)
		loop(p, s, w, newReceiver(ie, i, w), body[T]{
			each: func(c *chunk[T]) error { return each(c.items, out, h) },
			idle: flush,
			end:  flush,
			held: withHeld(out.flushHeld, h),
		})
	})
}

// checkFunc panics if a stage's function is nil.
func checkFunc(kind, name string, isNil bool) {
	if isNil {
		panic(fmt.Sprintf("sluice: %s %q: nil function", kind, name))
	}
}

// apply calls f on items into dst (len(dst) ≥ len(items)), checking before
// each call that the pipeline is not halted; a failed item is settled by
// h and leaves no result. It returns how many results it stored and
// errStopped or f's error if it stopped early.
func apply[T, U any](p *Pipeline, ctx context.Context, f func(context.Context, T) (U, error), items []T, dst []U, h *onError[T]) (int, error) {
	dst = dst[:len(items)]
	if h == nil { // fail fast: the plain loop
		for i, v := range items {
			if p.halted() {
				return i, errStopped
			}
			u, err := f(ctx, v)
			if err != nil {
				return i, err
			}
			dst[i] = u
		}
		return len(items), nil
	}
	k := 0
	for _, v := range items {
		if p.halted() {
			return k, errStopped
		}
		if err := h.throttle(ctx); err != nil {
			return k, err
		}
		u, err := f(ctx, v)
		if err != nil {
			var ok bool
			if u, ok, err = retryCall(h, ctx, f, v, err); err != nil {
				return k, err
			}
			if !ok {
				continue
			}
		}
		dst[k] = u
		k++
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
	s, cfg, ie := openPool(p, "Map", "map", name, in, n, f == nil, opts, noWindow)
	oe := newEdge[U](p, s, s.slots(), cfg)
	pol := newPolicy[T](p, s, s.slots(), cfg.errs)
	f = timed(f, cfg.errs.timeout)
	ctx := p.ctx
	mapStage(p, s, ie, oe, pol, func(items []T, out *sender[U], h *onError[T]) error {
		// Results go straight into the free part of the output chunk: the
		// per-item work is then one call of f and one store.
		for len(items) > 0 {
			dst := out.space()
			k := min(len(dst), len(items))
			done, err := apply(p, ctx, f, items[:k], dst, h)
			if !out.commit(done) || err != nil {
				return orStopped(err)
			}
			items = items[k:]
		}
		return nil
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
	s, cfg, ie := openPool(p, "Filter", "filter", name, in, n, keep == nil, opts, noWindow)
	oe := newEdge[T](p, s, s.slots(), cfg)
	pol := newPolicy[T](p, s, s.slots(), cfg.errs)
	keep = timed(keep, cfg.errs.timeout)
	ctx := p.ctx
	rc := receiptsOf[T]()
	mapStage(p, s, ie, oe, pol, func(items []T, out *sender[T], h *onError[T]) error {
		for i, v := range items {
			if p.halted() {
				return errStopped
			}
			if err := h.throttle(ctx); err != nil {
				return err
			}
			ok, err := keep(ctx, v)
			if err != nil {
				var retried bool
				if ok, retried, err = retryCall(h, ctx, keep, v, err); err != nil {
					return err
				}
				if !retried {
					continue // settled by the policy
				}
			}
			if !ok {
				if rc != nil {
					rc(&items[i], ack) // dropped: done with
				}
				continue
			}
			if !out.send(v) {
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
// the pipeline unless an error option ([SkipErrors], [DeadLetter], [Retry])
// settles it. emit must not be called after f returns. Each result that
// carries a [Receipt] holds it; the input's own hold is acknowledged when
// f returns nil, so a message is settled once all its results are (at
// once when there are none).
func FlatMap[T, U any](p *Pipeline, name string, in Stream[T], n int, f func(ctx context.Context, v T, emit func(U) bool) error, opts ...StageOption) Stream[U] {
	s, cfg, ie := openPool(p, "FlatMap", "flat-map", name, in, n, f == nil, opts, noWindow)
	oe := newEdge[U](p, s, s.slots(), cfg)
	pol := newPolicy[T](p, s, s.slots(), cfg.errs)
	if d := cfg.errs.timeout; d > 0 {
		inner := f
		f = func(ctx context.Context, v T, emit func(U) bool) error {
			c, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			if err := inner(c, v, emit); err != nil {
				return timedOut(ctx, c, d, err)
			}
			return nil
		}
	}
	ctx := p.ctx
	rin, rout := receiptsOf[T](), receiptsOf[U]()
	mapStage(p, s, ie, oe, pol, func(items []T, out *sender[U], h *onError[T]) error {
		// emit checks the halt flag as the loop does before each call:
		// once the pipeline stops it returns false at once, not only when
		// the chunk fills. A result that carries a receipt holds it
		// before it leaves (see Receipt).
		emit := func(u U) bool {
			if rout != nil {
				rout(&u, settleOp{hold: 1})
			}
			return !p.halted() && out.send(u)
		}
		for i, v := range items {
			if p.halted() {
				return errStopped
			}
			if err := h.throttle(ctx); err != nil {
				return err
			}
			if err := f(ctx, v, emit); err != nil {
				again := func(ctx context.Context, v T) error { return f(ctx, v, emit) }
				ok, err := retryErr(h, ctx, again, v, err)
				if err != nil {
					return err
				}
				if !ok {
					continue // settled by the policy
				}
			}
			if rin != nil {
				rin(&items[i], ack) // the input's own hold: its results hold it now
			}
		}
		return nil
	})
	return Stream[U]{oe}
}
