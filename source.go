package sluice

import (
	"context"
	"fmt"
	"iter"
)

// Emitter is how a [From] generator hands items to the pipeline. It is used
// by the generator's goroutine only, and only until the generator returns.
//
// Send is written to be inlined into the generator's loop, so that sending
// an item costs a store and a compare, not a call. Go inlines no function
// that calls another one unless the whole is very small, and handing a full
// chunk on is not small; so Send makes no call at all: when the chunk is
// full it passes the hand-off to the stage's flusher goroutine over a
// channel and waits for the answer. That costs two channel operations and
// two goroutine switches per chunk (about a microsecond for up to
// [DefaultChunk] items) and saves a call per item. On seed 002's squares
// program it took sluice from 158M to 203M values/s (median of 8 runs each,
// interleaved).
type Emitter[T any] struct {
	s       sender[T]     // by value: Send reaches the chunk with no extra load
	full    chan struct{} // Send → flusher: the chunk is full, hand it on
	flushed chan bool     // flusher → Send: the result of the hand-off
}

// Send adds v to the stream. It blocks only when the stream is full (under
// the default [Block] policy). It returns false once the pipeline has
// stopped; the generator should then return. v is handed downstream when
// its chunk fills, at the next Flush, or when the generator returns.
func (e *Emitter[T]) Send(v T) bool {
	s := &e.s
	s.buf[s.n] = v
	s.n++
	if s.n < len(s.buf) {
		return true
	}
	e.full <- struct{}{} // no call: see the type's documentation
	return <-e.flushed
}

// flusher hands full chunks on for Send until full is closed. The generator
// waits for each answer, so the sender is used by one goroutine at a time,
// and the channel operations order their accesses.
func (e *Emitter[T]) flusher(done chan<- struct{}) {
	defer close(done)
	for range e.full {
		e.flushed <- e.s.flush()
	}
}

// Flush hands what was sent so far downstream now, rather than when the
// chunk fills. A generator that waits between items — on a network, a timer,
// a slow read — calls Flush before waiting so that those items are not held
// back. It returns false once the pipeline has stopped.
func (e *Emitter[T]) Flush() bool { return e.s.flush() }

// Await tells the pipeline that the generator is about to wait for its own
// input: it flushes what was sent so far, marks the stage as waiting for
// input in [Pipeline.Stats] while wait runs, and returns false if the
// pipeline has stopped (wait is then not called). Use it around a blocking
// read, so that the stage shows as idle rather than busy:
//
//	ok := out.Await(func() { msg, err = sub.Next() })
func (e *Emitter[T]) Await(wait func()) bool {
	if !e.s.flush() {
		return false
	}
	e.s.w.waitInput()
	defer e.s.w.resume()
	wait()
	return true
}

// From starts a source stage: one goroutine runs gen, which sends items
// through its [Emitter] and returns when it has no more. The stream closes
// when gen returns nil; an error from gen fails the pipeline. gen must
// return soon after ctx is cancelled or Send returns false.
//
// Cost: Send is a store into a chunk, inlined into gen's loop; a full chunk
// crosses to the consumer in a few channel operations (see [Emitter]). The
// stage runs gen's goroutine plus one that hands full chunks on.
func From[T any](p *Pipeline, name string, gen func(ctx context.Context, out *Emitter[T]) error, opts ...StageOption) Stream[T] {
	if gen == nil {
		panic(fmt.Sprintf("sluice: From %q: nil generator", name))
	}
	s := newStage(p, "source", name, 1)
	oe := newEdge[T](p, s, 1, stageOptions(opts))
	w := s.workers[0]
	em := &Emitter[T]{full: make(chan struct{}), flushed: make(chan bool)}
	out := &em.s
	out.init(oe, 0, w)
	p.goStage(s, w, func() error {
		// The flusher is owned by this goroutine: it ends before this one
		// does, whether gen returns or panics.
		flusherDone := make(chan struct{})
		go em.flusher(flusherDone)
		defer func() {
			close(em.full)
			<-flusherDone
		}()
		if err := gen(p.ctx, em); err != nil {
			if p.stopped() {
				return p.cause() // the generator saw the cancellation
			}
			return wrap(s, err)
		}
		return p.finish(out)
	})
	return Stream[T]{oe}
}

// FromSlice starts a source stage that sends the items of xs in order, then
// closes the stream. The items are copied as they are sent; xs must not be
// modified until the pipeline is done. One goroutine.
func FromSlice[T any](p *Pipeline, name string, xs []T, opts ...StageOption) Stream[T] {
	s := newStage(p, "source", name, 1)
	oe := newEdge[T](p, s, 1, stageOptions(opts))
	w := s.workers[0]
	out := newSender(oe, 0, w)
	p.goStage(s, w, func() error {
		for len(xs) > 0 {
			k := copy(out.buf[out.n:], xs)
			out.n += k
			xs = xs[k:]
			if !out.flush() {
				return p.cause()
			}
		}
		return p.finish(out)
	})
	return Stream[T]{oe}
}

// FromSeq starts a source stage that sends every item of seq, then closes
// the stream. Items are flushed in chunks; use [From] with [Emitter.Flush]
// or [FromChan] when seq waits between items and latency matters. One
// goroutine; seq stops being iterated once the pipeline stops.
func FromSeq[T any](p *Pipeline, name string, seq iter.Seq[T], opts ...StageOption) Stream[T] {
	if seq == nil {
		panic(fmt.Sprintf("sluice: FromSeq %q: nil sequence", name))
	}
	return From(p, name, func(ctx context.Context, out *Emitter[T]) error {
		for v := range seq {
			if !out.Send(v) {
				return ctx.Err()
			}
		}
		return nil
	}, opts...)
}

// FromChan starts a source stage that sends every value received from ch
// until ch is closed. Whenever ch is empty, what was received so far is
// handed downstream before waiting, so a trickle of values is not held back.
// One goroutine, which stops when ch closes or the pipeline stops.
func FromChan[T any](p *Pipeline, name string, ch <-chan T, opts ...StageOption) Stream[T] {
	if ch == nil {
		panic(fmt.Sprintf("sluice: FromChan %q: nil channel", name))
	}
	s := newStage(p, "source", name, 1)
	oe := newEdge[T](p, s, 1, stageOptions(opts))
	w := s.workers[0]
	out := newSender(oe, 0, w)
	done := p.ctx.Done()
	p.goStage(s, w, func() error {
		for {
			var v T
			var ok bool
			select {
			case v, ok = <-ch:
			default:
				if !out.flush() {
					return p.cause()
				}
				w.waitInput()
				select {
				case v, ok = <-ch:
				case <-done:
				}
				w.resume()
				if p.stopped() {
					return p.cause()
				}
			}
			if !ok {
				return p.finish(out)
			}
			if !out.send(v) {
				return p.cause()
			}
		}
	})
	return Stream[T]{oe}
}
