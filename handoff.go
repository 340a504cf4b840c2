package sluice

// The sinks that hand items to the caller's own code: ToChan and ToSeq.

import (
	"fmt"
	"iter"
	"sync/atomic"
)

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
