package sluice

import (
	"context"
	"fmt"
	"iter"
)

// source runs the one goroutine of source stage s: gen, then the last
// flush. With flusher, gen uses Emitter.Send, and a flusher goroutine owned
// by this one hands full chunks on (see Emitter).
func source[T any](p *Pipeline, s *stage, em *Emitter[T], flusher bool, gen func() error) {
	p.goStage(s, s.workers[0], func() error {
		if flusher {
			done := make(chan struct{})
			go em.flusher(done)
			defer func() {
				close(em.full)
				<-done
			}()
		}
		defer em.end()
		// errStopped from gen means a send or a check saw the pipeline
		// draining or stopping; what was sent still goes on (a drain) or
		// is abandoned by the flush (a stop).
		if err := gen(); err != nil && err != errStopped {
			return err
		}
		if !em.s.flush() {
			return errStopped
		}
		return nil
	})
}

// newSource registers a source stage and its output edge.
func newSource[T any](p *Pipeline, name string, opts []StageOption) (*stage, *edge[T], *Emitter[T]) {
	cfg := stageOptions(kindSource, name, opts)
	s := newStage(p, kindSource, name, 1)
	oe := newEdge[T](p, s, 1, cfg)
	if p.tracer != nil {
		oe.begin = sourceTraces(p, s, receiptsOf[T]())
	}
	return s, oe, newEmitter(oe, s)
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
	defer guard(p)
	checkFunc("From", name, gen == nil)
	s, oe, em := newSource[T](p, name, opts)
	source(p, s, em, true, func() error { return gen(p.ctx, em) })
	return Stream[T]{oe}
}

// FromSlice starts a source stage that sends the items of xs in order, then
// closes the stream. The items are copied as they are sent; xs must not be
// modified until the pipeline is done. One goroutine.
func FromSlice[T any](p *Pipeline, name string, xs []T, opts ...StageOption) Stream[T] {
	defer guard(p)
	s, oe, em := newSource[T](p, name, opts)
	out := &em.s
	source(p, s, em, false, func() error {
		for len(xs) > 0 && !p.intakeClosed() {
			k := copy(out.space(), xs)
			xs = xs[k:]
			if !out.commit(k) {
				return errStopped
			}
		}
		return nil
	})
	return Stream[T]{oe}
}

// FromSeq starts a source stage that sends every item of seq, then closes
// the stream. Items are flushed in chunks; use [From] with [Emitter.Flush]
// or [FromChan] when seq waits between items and latency matters. One
// goroutine; seq stops being iterated once the pipeline drains or stops.
// seq itself is not interrupted: a drain or stop is noticed when it next
// yields, so a seq that can block (on a network, a channel) should also
// end when p.Context() is done, or Wait waits for it.
func FromSeq[T any](p *Pipeline, name string, seq iter.Seq[T], opts ...StageOption) Stream[T] {
	defer guard(p)
	if seq == nil {
		panic(fmt.Sprintf("sluice: FromSeq %q: nil sequence", name))
	}
	s, oe, em := newSource[T](p, name, opts)
	out := &em.s
	source(p, s, em, false, func() error {
		if p.intakeClosed() {
			return nil
		}
		// An item seq has yielded is taken: it is sent even when a drain
		// began meanwhile, and the iteration stops after it.
		for v := range seq {
			if !out.send(v) {
				return errStopped
			}
			if p.intakeClosed() {
				break
			}
		}
		return nil
	})
	return Stream[T]{oe}
}

// FromChan starts a source stage that sends every value received from ch
// until ch is closed. Whenever ch is empty, what was received so far is
// handed downstream before waiting, so a trickle of values is not held back.
// One goroutine, which stops when ch closes or the pipeline stops.
func FromChan[T any](p *Pipeline, name string, ch <-chan T, opts ...StageOption) Stream[T] {
	defer guard(p)
	if ch == nil {
		panic(fmt.Sprintf("sluice: FromChan %q: nil channel", name))
	}
	s, oe, em := newSource[T](p, name, opts)
	out := &em.s
	source(p, s, em, false, func() error {
		for !p.intakeClosed() {
			var v T
			var ok bool
			select {
			case v, ok = <-ch:
			default:
				waited := em.Await(func() {
					select {
					case v, ok = <-ch:
					case <-em.done:
					}
				})
				if !waited || !ok && p.intakeClosed() {
					return nil // drained or stopped: source's end tells which
				}
			}
			if !ok {
				return nil
			}
			if !out.send(v) {
				return errStopped
			}
		}
		return nil
	})
	return Stream[T]{oe}
}

// FromSeq2 starts a source stage that sends the values of seq until it
// ends or yields a non-nil error, which fails the pipeline (a
// [*StageError]): as at any failure, items still on their way are
// abandoned. The value beside an error is not sent. It stops
// iterating when the pipeline drains or stops, noticed when seq next
// yields (see [FromSeq]). One goroutine.
func FromSeq2[T any](p *Pipeline, name string, seq iter.Seq2[T, error], opts ...StageOption) Stream[T] {
	defer guard(p)
	if seq == nil {
		panic(fmt.Sprintf("sluice: FromSeq2 %q: nil sequence", name))
	}
	s, oe, em := newSource[T](p, name, opts)
	out := &em.s
	source(p, s, em, false, func() error {
		if p.intakeClosed() {
			return nil
		}
		for v, err := range seq {
			if err != nil {
				return err
			}
			// Taken once yielded, as in FromSeq.
			if !out.send(v) || p.intakeClosed() {
				break
			}
		}
		return nil
	})
	return Stream[T]{oe}
}
