package sluice

import (
	"fmt"
	"sync/atomic"
)

// Emitter is how a [From] generator hands items to the pipeline. It is used
// by the generator's goroutine only, and only until the generator returns:
// Send, Flush or Await called after that panics.
//
// Send is written to be inlined into the generator's loop, so that sending
// an item costs a store and a compare, not a call. Go inlines no function
// that calls another one unless the whole is very small, and handing a full
// chunk on is not small; so Send makes no call at all: when the chunk is
// full it passes the hand-off to the stage's flusher goroutine over a
// channel and waits for the answer. That costs two channel operations and
// two goroutine switches per chunk (about a microsecond for up to
// [DefaultChunk] items) and saves a call per item.
type Emitter[T any] struct {
	s       sender[T]     // by value: Send reaches the chunk with no extra load
	full    chan struct{} // Send → flusher: the chunk is full, hand it on
	flushed chan bool     // flusher → Send: the result of the hand-off
	stop    *atomic.Bool  // the pipeline's noIntake flag, read when a chunk fills
	done    <-chan struct{}
	ended   bool   // the generator has returned: every method panics
	misuse  string // the panic message then
	// nilAwait is the panic message of Await(nil).
	nilAwait string
}

func newEmitter[T any](e *edge[T], s *stage) *Emitter[T] {
	em := &Emitter[T]{
		full: make(chan struct{}), flushed: make(chan bool),
		stop: &e.p.noIntake.Bool, done: e.p.intake,
		misuse:   fmt.Sprintf("sluice: From %q: Emitter used after its generator returned; an Emitter is valid only inside the generator's call", s.name),
		nilAwait: fmt.Sprintf("sluice: From %q: Emitter.Await called with a nil function", s.name),
	}
	em.s.init(e, 0, s.workers[0])
	em.s.take(e.get())
	return em
}

// Send adds v to the stream. It blocks only when the stream is full (under
// the default [Block] policy). It returns false once the pipeline is
// draining or has stopped (v is then not taken); the generator should then
// return. v is handed downstream when its chunk fills, at the next Flush,
// or when the generator returns.
//
// Send notices a drain or a stop at a chunk boundary — when a chunk fills,
// or at the next [Emitter.Flush] or [Emitter.Await] — not per item (a
// check per item would cost a cheap generator a good share of its
// throughput; see docs/performance.md). So it may take the items up to
// that boundary after one: after a drain they go through like the rest;
// after a stop they are abandoned. A generator that flushes after each
// item sees Send return false at its next item. A generator that must
// stop at once checks ctx.Err() or [Emitter.Done] itself.
func (e *Emitter[T]) Send(v T) bool {
	s := &e.s
	s.buf[s.n] = v
	s.n++
	if s.n < len(s.buf) {
		return true
	}
	if e.ended {
		s.n = 0
		panic(e.misuse)
	}
	if e.stop.Load() {
		s.n-- // v is not taken
		return false
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
		ok := e.s.fullChunk()
		e.closeIfDraining()
		e.flushed <- ok
	}
}

// closeIfDraining is called at each chunk boundary (a full chunk handed
// on, a Flush): once the pipeline is draining or has stopped, it ends the
// current chunk's room after the items already in it, so that the next
// Send reaches its full-chunk path, which checks the flag and returns
// false. Send itself checks only when a chunk fills, and every Flush
// starts a new chunk: without this, a generator that flushes after each
// item would never see Send return false. One atomic load per boundary.
func (e *Emitter[T]) closeIfDraining() {
	if s := &e.s; e.stop.Load() && s.n < len(s.buf) {
		s.buf = s.buf[:s.n+1]
	}
}

// Flush hands what was sent so far downstream now, rather than when the
// chunk fills. A generator that waits between items — on a network, a timer,
// a slow read — calls Flush before waiting so that those items are not held
// back. It returns false once the pipeline has stopped. A Flush is a chunk
// boundary: once the pipeline is draining, the next Send returns false,
// whether or not the generator looks at Flush's result.
func (e *Emitter[T]) Flush() bool {
	if e.ended {
		panic(e.misuse)
	}
	ok := e.s.flush()
	e.closeIfDraining()
	return ok
}

// Await tells the pipeline that the generator is about to wait for its own
// input: it flushes what was sent so far, marks the stage as waiting for
// input in [Pipeline.Stats] while wait runs, and returns false if the
// pipeline is draining or has stopped (wait is then not called). Use it
// around a blocking read, so that the stage shows as idle rather than
// busy; the read should also end when [Emitter.Done] is closed:
//
//	ok := out.Await(func() { msg, err = sub.Next() })
func (e *Emitter[T]) Await(wait func()) bool {
	if wait == nil {
		panic(e.nilAwait)
	}
	if !e.Flush() || e.stop.Load() {
		return false
	}
	e.s.w.waitInput()
	defer e.s.w.resume()
	wait()
	return true
}

// Done returns a channel that is closed when the generator should stop
// taking input: the pipeline is draining ([Pipeline.Drain]) or has
// stopped. A generator that blocks on its own input selects on it.
func (e *Emitter[T]) Done() <-chan struct{} { return e.done }

// end makes every later use of the Emitter panic. Send's chunk becomes a
// one-slot scratch buffer, so that its next call reaches the full-chunk
// path, which checks ended.
func (e *Emitter[T]) end() {
	e.ended = true
	e.s.buf, e.s.n = make([]T, 1), 0
}
