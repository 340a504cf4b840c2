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

// mapper is one worker's way of calling a Map or OrderedMap function:
// directly, or through its chain, which leaves each result in res.
type mapper[T, U any] struct {
	p   *Pipeline
	f   func(context.Context, T) (U, error)
	ch  *chain[T] // nil: no chain
	res U
}

func newMapper[T, U any](p *Pipeline, ic itemCalls[T], i int, w *worker, f func(context.Context, T) (U, error)) *mapper[T, U] {
	m := &mapper[T, U]{p: p, f: f}
	if ic.cs != nil {
		// The chain's call of f on *v, which leaves its result in m.res.
		m.ch = ic.worker(i, w, func(ctx context.Context, v *T) (err error) {
			m.res, err = f(ctx, *v)
			return err
		})
	}
	return m
}

// apply calls f on items into dst (len(dst) ≥ len(items)). It returns how
// many results it stored — an item settled as failed leaves none — and
// errStopped or the error that fails the pipeline if it stopped early.
func (m *mapper[T, U]) apply(ctx context.Context, items []T, dst []U) (int, error) {
	dst = dst[:len(items)]
	if m.ch == nil { // the plain loop
		p, f := m.p, m.f
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
	for i := range items {
		switch err := m.ch.run(ctx, &items[i]); err {
		case nil:
			dst[k] = m.res
			k++
		case errSettled:
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
		m := newMapper(p, ic, i, w, f)
		return func(items []T) error {
			// Results go straight into the free part of the output chunk:
			// the per-item work is then one call of f and one store.
			for len(items) > 0 {
				dst := out.space()
				k := min(len(dst), len(items))
				done, err := m.apply(ctx, items[:k], dst)
				if !out.commit(done) || err != nil {
					return orStopped(err)
				}
				items = items[k:]
			}
			return nil
		}, m.ch
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
		m := newMapper(p, ic, i, w, keep)
		return func(items []T) error {
			for i, v := range items {
				ok, err := m.one(ctx, &items[i])
				switch {
				case err == errSettled:
					continue
				case err != nil:
					return err
				case !ok:
					if rc != nil {
						rc(&items[i], ack) // dropped: done with
					}
				case !out.send(v):
					return errStopped
				}
			}
			return nil
		}, m.ch
	})
	return Stream[T]{oe}
}

// one calls f on *v, directly or through the chain: its result, or
// errSettled, errStopped or the error that fails the pipeline.
func (m *mapper[T, U]) one(ctx context.Context, v *T) (u U, err error) {
	if m.ch == nil {
		if m.p.halted() {
			return u, errStopped
		}
		return m.f(ctx, *v)
	}
	if err = m.ch.run(ctx, v); err != nil {
		return u, err
	}
	return m.res, nil
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
		emit := func(u U) bool { return !p.halted() && out.send(u) }
		if rout != nil {
			emit = func(u U) bool {
				rout(&u, settleOp{hold: 1})
				return !p.halted() && out.send(u)
			}
		}
		m := newMapper(p, ic, i, w, func(ctx context.Context, v T) (struct{}, error) { return struct{}{}, f(ctx, v, emit) })
		return func(items []T) error {
			for i := range items {
				switch _, err := m.one(ctx, &items[i]); err {
				case nil:
					if rin != nil {
						rin(&items[i], ack) // the input's own hold: its results hold it now
					}
				case errSettled:
				default:
					return err
				}
			}
			return nil
		}, m.ch
	})
	return Stream[U]{oe}
}
