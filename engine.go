package sluice

import (
	"reflect"
	"runtime"
	"runtime/debug"
	"time"
)

// The engine. Every stage is its argument checks plus a body; the engine
// runs the body's goroutines and keeps every promise of the package
// documentation in one place:
//
//   - goStage owns each goroutine: it is counted before it starts, so Wait
//     cannot return while it runs; a panic becomes a *PanicError, a
//     runtime.Goexit an error naming the stage (never a silent exit that
//     would leave the producer blocked); the last goroutine of a stage to
//     exit closes its output edges; and how the goroutine ended is turned
//     into the pipeline's error by endedWith: once the pipeline is stopping,
//     whatever the body returned, the error is the stop's cause (the first
//     failure, or the parent context's cause), so a function that answers
//     a cancelled context with ctx.Err() does not mask it.
//   - loop is the one input loop: it takes chunks, flushes the stage's
//     partial output before any wait and when it has held items too long
//     (a slow stage whose input never runs dry), wakes for a timer (Batch), stops at
//     once when the pipeline stops, measures each chunk so that the edge's
//     chunk size follows the stage's cost per item, and gives every chunk
//     back to the pool it came from.
//
// What a stage body must do:
//
//   - Before each call of a user function, check p.halted() (two atomic
//     loads) and return errStopped if it is set: a stop is then noticed
//     within one item, even in the middle of a chunk.
//   - Return a user function's error as it is (endedWith wraps it in a
//     *StageError), and errStopped when an output's send returns false.
//   - Send output through its own sender (one per worker and output edge);
//     never keep an input chunk's items past the call (copy what it
//     keeps); a stage that hands chunks on whole uses pass instead of
//     each.
//   - Do nothing else that blocks without selecting on p.ctx.Done() and
//     marking the wait on its worker (waitInput/waitRoom, then resume).
//
// Adding a stage means writing only such a body; a concern around each
// call of a user function (a Retry, a Throttle) is a step of the call chain
// instead (chain.go; see docs/internals.md).

// body is what a stage with an input does with it; see the engine's
// comment above for the rules.
type body[T any] struct {
	// each handles one input chunk; the loop recycles it afterwards.
	each func(c *chunk[T]) error
	// pass, instead of each, takes over whole chunks (Merge): it returns
	// false when the pipeline stopped, and then still owns c.
	pass func(c *chunk[T]) bool
	// idle flushes the stage's partial output before the loop waits for
	// input; false means the pipeline stopped.
	idle func() bool
	// alarm, if set, is asked before each wait for a channel that ends the
	// wait early (nil: none); ring then runs, and false from it stops.
	alarm func() <-chan time.Time
	ring  func() bool
	// end hands on what is left once the input is drained; false means the
	// pipeline stopped.
	end func() bool
	// held, if set, is called after each chunk with the times the chunk
	// started and ended: it hands on output chunks that have held items
	// too long (see sender.flushHeld), on every output of the stage that
	// fills chunks of its own, dead letters included (withHeld); false
	// means the pipeline stopped.
	held func(start, now int64) bool
}

// loop starts worker w of stage s reading r with body b.
func loop[T any](p *Pipeline, s *stage, w *worker, r *receiver[T], b body[T]) {
	p.goStage(s, w, func() error {
		for {
			if s.auto != nil && s.auto.shed(w) {
				// The engine took this worker away: it hands on what it
				// holds and exits between two chunks, so no item is lost
				// or repeated (a worker waiting for input is kicked out
				// of its wait to get here).
				if b.end != nil && !b.end() {
					return errStopped
				}
				return nil
			}
			c, rang, kicked := r.next(b.idle, b.alarm)
			if kicked {
				continue // shed, or kicked before the engine changed its mind
			}
			if rang {
				if !b.ring() {
					return errStopped
				}
				continue
			}
			if c == nil {
				break
			}
			if b.pass != nil {
				r.finished(c)
				if !b.pass(c) {
					r.e.put(c)
					return errStopped
				}
				continue
			}
			var start int64
			if b.held != nil {
				start = nowNs()
			}
			err := b.each(c)
			r.release(c)
			if err != nil {
				return err
			}
			if b.held != nil && !b.held(start, nowNs()) {
				return errStopped
			}
		}
		if p.stopping() || (b.end != nil && !b.end()) {
			return errStopped
		}
		return nil
	})
}

// goStage starts one goroutine of stage s, running run on worker w's
// account. The goroutine is counted in p.wg before it starts, so Wait
// cannot return while it runs; its slot is live from before it starts
// until after it has exited (see autoPool.add).
func (p *Pipeline) goStage(s *stage, w *worker, run func() error) {
	p.wg.Add(1)
	w.live.Store(true)
	go runStage(p, s, w, run)
}

// runStage is the body of every stage goroutine (see goStage). Its frame
// marks a goroutine that a pipeline's WaitGroup counts: see
// onStageGoroutine.
func runStage(p *Pipeline, s *stage, w *worker, run func() error) {
	defer p.wg.Done()
	w.begin()
	returned := false
	defer func() {
		w.resume()
		w.end()
		if r := recover(); r != nil {
			p.fail(&PanicError{Stage: s.name, Value: r, At: panicSite(), Stack: debug.Stack()})
		} else if !returned {
			p.fail(&StageError{Stage: s.name, Err: ErrGoexit})
		}
		s.exited()
		w.live.Store(false)
	}()
	err := run()
	returned = true
	p.endedWith(s, err)
}

// stageEntry is runStage's name as the runtime reports it in a frame.
var stageEntry = runtime.FuncForPC(reflect.ValueOf(runStage).Pointer()).Name()

// onStageGoroutine reports whether the caller runs on a stage goroutine of
// some pipeline (runStage is on its stack): that pipeline's WaitGroup
// counts it, so it must never wait on that group. It walks the whole
// stack (a few µs): only failure paths call it.
func onStageGoroutine() bool {
	pcs := make([]uintptr, 64)
	for {
		n := runtime.Callers(1, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs))
	}
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if f.Function == stageEntry {
			return true
		}
		if !more {
			return false
		}
	}
}

// endedWith turns how a goroutine of stage s ended into the pipeline's error.
// Once the pipeline is stopping, the error is the stop's cause whatever
// run returned: an error returned then is an echo of the cancellation
// (ctx.Err() from a function, a failed send), not news.
func (p *Pipeline) endedWith(s *stage, err error) {
	if p.stopping() {
		if c := p.cause(); c != nil {
			p.fail(c)
		}
		return
	}
	if err != nil && err != errStopped {
		p.fail(&StageError{Stage: s.name, Err: err})
	}
}
