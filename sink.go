package sluice

import (
	"context"
	"fmt"
)

// sinkStage starts the n workers of a sink. Each builds its body with
// work: the function it calls with the items of every chunk it takes from
// ie, and its call chain (nil: none). With adapt, the workers time their
// chunks and tune ie's chunk size (see receiver.tune); otherwise ie
// carries full chunks. With gather > 0 (ForEachChunk's Gather), each call
// of each holds the items of the chunks waiting in ie too, up to gather.
func sinkStage[T, X any](p *Pipeline, s *stage, ie *edge[T], adapt bool, gather int, work func(i int, w *worker) (func(items []T) error, *chain[X])) {
	if adapt {
		ie.measured(0)
	} else {
		ie.unmeasured()
	}
	s.start(p, func(i int, w *worker) {
		each, ch := work(i, w)
		flush := withFlush(nil, ch)
		r := newReceiver(ie, i, w)
		one := func(c *chunk[T]) error { return each(c.items) }
		if gather > 0 {
			g := newGatherer(r, gather)
			one = func(c *chunk[T]) error { return g.each(c, each) }
		}
		loop(p, s, w, r, body[T]{
			each: one,
			idle: flush,
			end:  flush,
			held: withHeld(nil, ch),
		})
	})
}

// ForEach starts a sink of n workers that call f for every item of in, in
// no particular order when n > 1. An error from f fails the pipeline
// unless an error option ([SkipErrors], [DeadLetter], [Retry]) settles it.
// Once f returns nil for an item, the item's receipts are acknowledged
// (see [Receipt]); an item that is a batch acknowledges every receipt in
// it.
func ForEach[T any](p *Pipeline, name string, in Stream[T], n int, f func(ctx context.Context, v T) error, opts ...StageOption) {
	defer guard(p)
	s, cfg, ie := openPool(p, kindForEach, name, in, n, f == nil, opts)
	ic := newItemCalls[T](p, s, cfg.calls)
	ctx := p.ctx
	rc := receiptsOf[T]()
	sinkStage(p, s, ie, true, 0, func(i int, w *worker) (func([]T) error, *chain[T]) {
		call, ch := sinkCallOf(ic.cs, w, ic.disposalOf(i, w), f)
		return func(items []T) error {
			for i, v := range items {
				if p.halted() {
					return errStopped
				}
				switch err := call(ctx, v); err {
				case nil:
					if rc != nil {
						rc(&items[i], ack)
					}
				case errDisposed:
				default:
					return err
				}
			}
			return nil
		}, ch
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
// [Chunk] says otherwise. With [Gather], a call takes every chunk waiting,
// so a sink that falls behind makes fewer, larger calls. items is valid
// only during the call; f must copy what it keeps. An error from f fails
// the pipeline; with an error option, the whole call is retried, and then
// every item of the call is skipped or dead-lettered. Once f returns nil,
// every item's receipts are acknowledged (see [Receipt]): write, then
// settle. A function that stored some items and not others says which
// with [ItemErrors]: the stored ones are acknowledged, and only the
// failed ones are retried and settled.
func ForEachChunk[T any](p *Pipeline, name string, in Stream[T], n int, f func(ctx context.Context, items []T) error, opts ...StageOption) {
	defer guard(p)
	s, cfg, ie := openPool(p, kindForEachChunk, name, in, n, f == nil, opts)
	ds := newDispose[T](p, s, s.slots(), cfg.calls)
	// A call on a chunk always goes through a chain, if only its base
	// when no option adds a step: its cost is per chunk.
	cs := newCalls[[]T](p, s, cfg.calls, true)
	cs.chunked = true
	ctx := p.ctx
	rc := receiptsOf[T]()
	sinkStage(p, s, ie, false, cfg.gather, func(i int, w *worker) (func([]T) error, *chain[[]T]) {
		cc := &chunkCall[T]{stage: name, f: f, rc: rc}
		var d disposal[[]T] // nil unless the stage disposes
		if ds != nil {
			cc.ds = ds.worker(i, w)
			d = cc
		}
		// The chain runs on cc.cur, the items still to store, which a
		// call compacts in place (see chunkCall.call).
		ch := cs.worker(w, cc.call, d)
		return func(items []T) error {
			if p.halted() {
				return errStopped
			}
			cc.begin(items)
			return cc.done(ch.run(ctx, &cc.cur))
		}, ch
	})
}

// Result is the value a sink computes. Read it with Value once the pipeline
// is done.
type Result[T any] struct {
	v    T
	done chan struct{}
	p    *Pipeline
	s    *stage
}

// Value waits until the sink has finished — its input drained, or the
// pipeline stopped — and returns what it computed. After a failed or
// cancelled pipeline the value covers only the items that arrived; check
// [Pipeline.Wait]'s error before trusting it. Called before Wait while a
// stream upstream of the sink has no consumer yet, it would wait for ever
// (see [Stream]): it stops the pipeline and panics, naming the stream.
func (r *Result[T]) Value() T {
	r.p.mustBeFed(r.s, fmt.Sprintf("Value of %s %q", r.s.kind, r.s.name), r.done)
	<-r.done
	return r.v
}

// resultSink starts a one-goroutine sink that computes a Result with each.
func resultSink[T, A any](p *Pipeline, k stageKind, name string, in Stream[T], init A, each func(acc *A, items []T) error) *Result[A] {
	s := newStage(p, k, name, 1)
	ie := consume(p, s, in, 1)
	res := &Result[A]{v: init, done: make(chan struct{}), p: p, s: s}
	s.onStageDone(func() { close(res.done) })
	sinkStage(p, s, ie, true, 0, func(int, *worker) (func([]T) error, *chain[T]) {
		return func(items []T) error { return each(&res.v, items) }, nil
	})
	return res
}

// Reduce starts a one-goroutine sink that folds the items of in, in order,
// into an accumulator that starts at init.
func Reduce[T, A any](p *Pipeline, name string, in Stream[T], init A, f func(acc A, v T) A) *Result[A] {
	defer guard(p)
	checkFunc(kindReduce.label(), name, f == nil)
	return resultSink(p, kindReduce, name, in, init, func(res *A, items []T) error {
		acc := *res
		for _, v := range items {
			if p.halted() {
				*res = acc
				return errStopped
			}
			acc = f(acc, v)
		}
		*res = acc
		return nil
	})
}

// Collect starts a one-goroutine sink that gathers every item of in, in
// order, into a slice.
func Collect[T any](p *Pipeline, name string, in Stream[T]) *Result[[]T] {
	defer guard(p)
	return resultSink(p, kindCollect, name, in, nil, func(res *[]T, items []T) error {
		*res = append(*res, items...)
		return nil
	})
}
