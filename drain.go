package sluice

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Draining: a pipeline's sources stop taking input, and everything inside
// finishes. The intake closes once, on Drain, DrainOn or a stop; retries
// go on for the pipeline's DrainGrace after it.

// closeIntake tells every source to stop taking input.
// It reports whether this call closed it; first, if set, is called by
// the call that closes it, before any source or retry can see it closed.
func (p *Pipeline) closeIntake(first func()) (closed bool) {
	p.intakeOnce.Do(func() {
		if first != nil {
			// Before the flag: a retry that sees the intake closed and
			// its grace over logs after this (drain begun, then grace over).
			first()
		}
		p.drainAt = time.Now()
		p.noIntake.Store(true)
		close(p.intake)
		closed = true
	})
	return closed
}

// graceLeft is how much longer retries may wait in a drain (DrainGrace);
// call it only once the intake is closed.
func (p *Pipeline) graceLeft() time.Duration { return p.grace - time.Since(p.drainAt) }

// retriesOver reports whether a drain's grace period has passed: a failed
// call is then not retried.
func (p *Pipeline) retriesOver() bool { return p.intakeClosed() && p.graceLeft() <= 0 }

// intakeClosed reports whether sources must stop taking input (Drain, or a
// stop): one atomic load, read per item by sources.
func (p *Pipeline) intakeClosed() bool { return p.noIntake.Load() }

// Drain stops the pipeline's sources from taking new input and lets
// everything already inside finish: [Emitter.Send] returns false and
// [Emitter.Done] is closed, so a [From] generator returns; [FromSlice],
// [FromSeq] and [FromChan] stop reading; what the sources had taken goes
// through every stage, sinks consume it, and Wait returns nil (or the
// first error). Nothing already taken is lost, duplicated or reordered
// where order is promised. Drain returns at once; Wait waits for the
// drain. [Retry] backoffs go on for the pipeline's [DrainGrace] after the
// drain begins ([DefaultDrainGrace] unless set); then their items are
// settled by their stage's policy with their last error (dead-lettered,
// skipped, or failing the pipeline: Wait then returns a [*StageError]
// wrapping that error). Cancelling the context during a drain aborts it
// as any cancellation does. Safe to call from any goroutine, any number of
// times, before or after Wait.
func (p *Pipeline) Drain() {
	p.mustBeMade("Drain")
	p.drain()
}

// drain closes the intake, logging the drain's start once.
func (p *Pipeline) drain() {
	p.closeIntake(func() { p.logAt(slog.LevelInfo, "drain begun", LogDuration("grace", p.grace)) })
}

// DrainOn drains the pipeline (see [Pipeline.Drain]) when ctx is done —
// for example a context from signal.NotifyContext, so that SIGTERM lets
// the pipeline finish what it holds; if ctx is already done, the pipeline
// is drained when DrainOn returns. The drain's bound on retries,
// [DrainGrace], counts from then; set it below the time the process has
// before it is killed. It must be called before Wait.
func (p *Pipeline) DrainOn(ctx context.Context) {
	p.mustBeMade("DrainOn")
	if ctx == nil {
		panic(fmt.Sprintf("sluice: pipeline %q: DrainOn called with a nil context", p.name))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sealed {
		panic(fmt.Sprintf("sluice: pipeline %q: DrainOn called after Wait", p.name))
	}
	if ctx.Err() != nil { // drained when DrainOn returns, not when AfterFunc's goroutine runs
		p.drain()
		return
	}
	p.afterFunc(ctx, p.Drain)
}
