package sluice

import (
	"context"
	"fmt"
	"iter"
	"sync/atomic"
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
		if ic.cs == nil { // the plain loop
			return func(items []T) error {
				for i, v := range items {
					if p.halted() {
						return errStopped
					}
					if err := f(ctx, v); err != nil {
						return err
					}
					if rc != nil {
						rc(&items[i], ack)
					}
				}
				return nil
			}, nil
		}
		ch := ic.worker(i, w, func(ctx context.Context, v *T) error { return f(ctx, *v) })
		return func(items []T) error {
			for i := range items {
				switch err := ch.run(ctx, &items[i]); err {
				case nil:
					if rc != nil {
						rc(&items[i], ack)
					}
				case errSettled:
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
	d := newDispose[T](p, s, s.slots(), cfg.calls)
	cs := newCalls[[]T](p, s, cfg.calls, d != nil)
	ctx := p.ctx
	rc := receiptsOf[T]()
	sinkStage(p, s, ie, false, cfg.gather, func(i int, w *worker) (func([]T) error, *chain[[]T]) {
		cc := &chunkCall[T]{stage: name, f: f, rc: rc}
		var ch *chain[[]T]
		if d != nil {
			cc.ds = d.worker(i, w)
			ch = cs.worker(w, cc.call, cc)
		} else {
			ch = cs.worker(w, cc.call, nil)
		}
		return func(items []T) error {
			if ch == nil && p.halted() {
				return errStopped
			}
			cc.begin(items)
			if ch == nil {
				return cc.done(cc.call(ctx, &cc.cur))
			}
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

// ToChan starts a one-goroutine sink that sends every item of in, in
// order, on the returned channel, which closes when in is drained or the
// pipeline stops. The channel holds up to [ToChanBuffer] items, so that
// the stage fills it from its input's chunks without waking the receiver
// per item; a receive then costs what a receive from any buffered channel
// does (some tens of ns; see [ToSeq] for a few). The caller must receive
// until the channel closes, or cancel the pipeline: otherwise the stage
// waits for it forever. After a stop, the items already in the channel are
// still there to receive before it closes. A receive cannot check the
// graph as [Result.Value] and [ToSeq] do: build every stream's consumer
// before receiving.
func ToChan[T any](p *Pipeline, name string, in Stream[T]) <-chan T {
	defer guard(p)
	s := newStage(p, kindToChan, name, 1)
	ie := consume(p, s, in, 1)
	ch := make(chan T, ToChanBuffer)
	done := p.ctx.Done()
	w := s.workers[0]
	s.onStageDone(func() { close(ch) })
	send := func(items []T) error {
		for _, v := range items {
			select { // a send with room: no select over several channels
			case ch <- v:
				continue
			default:
			}
			w.waitRoom()
			select {
			case ch <- v:
			case <-done:
			}
			w.resume()
			if p.stopping() {
				return errStopped
			}
		}
		return nil
	}
	sinkStage(p, s, ie, true, 0, func(int, *worker) (func([]T) error, *chain[T]) { return send, nil })
	return ch
}

// ToChanBuffer is how many items the channel of [ToChan] holds.
const ToChanBuffer = 1024

// seqHold is how many items a ToSeq stage gathers, while its loop is busy
// with the items it was handed last, before it waits for the loop.
const seqHold = 4096

// ToSeq starts a one-goroutine sink whose items the caller reads with a
// range loop over the returned sequence, from any goroutine, in input
// order:
//
//	for v := range sluice.ToSeq(p, "out", s) { … }
//	err := p.Wait() // the pipeline's error, after the loop
//
// The stage hands the loop whole runs of items (what arrived while the
// loop was busy, up to 4096): the loop then takes an item for a few
// nanoseconds, not a channel operation. The sequence may be iterated
// once; a second iteration panics. The loop ends when in is drained or
// the pipeline stops (check Wait's error): after a stop, at the next item.
// If the loop stops early (break), the stage discards the rest of its
// input so that the pipeline can finish; cancel the pipeline's context or
// call [Pipeline.Drain] to stop the work instead. Until the loop starts,
// the stage gathers up to 4096 items, then waits for it, as [ToChan] does.
// A loop begun before Wait while a stream upstream of the sink has no
// consumer yet would wait for ever (see [Stream]): it stops the pipeline
// and panics, naming the stream.
func ToSeq[T any](p *Pipeline, name string, in Stream[T]) iter.Seq[T] {
	defer guard(p)
	s := newStage(p, kindToSeq, name, 1)
	ie := consume(p, s, in, 1)
	hand := make(chan []T)      // a run of items, stage to loop; closed when the stage ends
	back := make(chan []T, 2)   // the runs the loop is done with, to fill again
	left := make(chan struct{}) // closed when the loop stops early
	done := p.ctx.Done()
	w := s.workers[0]
	s.onStageDone(func() { close(hand) })
	var run []T // the items gathered, not handed over yet
	gone := false
	// give hands run over: at once if the loop is waiting, else after
	// waiting for it when wait is set; false means the pipeline stopped.
	give := func(wait bool) bool {
		if gone || len(run) == 0 {
			return true
		}
		select {
		case hand <- run:
		case <-left:
			gone = true
		default:
			if !wait {
				return true
			}
			w.waitRoom()
			select {
			case hand <- run:
			case <-left:
				gone = true
			case <-done:
			}
			w.resume()
			if p.stopping() {
				return false
			}
		}
		if gone {
			clear(run)
			run = run[:0]
			return true
		}
		select {
		case r := <-back:
			run = r[:0]
		default:
			run = nil
		}
		return true
	}
	each := func(items []T) error {
		if gone {
			return nil
		}
		if run == nil {
			run = make([]T, 0, max(len(items), 256))
		}
		run = append(run, items...)
		if !give(len(run) >= seqHold) {
			return errStopped
		}
		return nil
	}
	flush := func() bool { return give(true) }
	ie.measured(0)
	s.start(p, func(i int, w *worker) {
		r := newReceiver(ie, i, w)
		loop(p, s, w, r, body[T]{
			each: func(c *chunk[T]) error { return each(c.items) },
			idle: flush,
			end:  flush,
		})
	})
	var used atomic.Bool
	return func(yield func(T) bool) {
		if used.Swap(true) {
			panic(fmt.Sprintf("sluice: ToSeq %q: the sequence may be iterated only once", name))
		}
		defer close(left) // once: used lets one iteration through
		p.mustBeFed(s, fmt.Sprintf("the loop over ToSeq %q", name), nil)
		for r := range hand {
			for i := range r {
				// Stopped? Not p.halted: the scope's context is also
				// cancelled once Wait returns, maybe before the last run
				// is done.
				if p.halt.Load() || p.parent.Err() != nil {
					return
				}
				if !yield(r[i]) {
					return
				}
			}
			clear(r) // keep nothing alive that the loop was given
			select {
			case back <- r:
			default:
			}
		}
	}
}
