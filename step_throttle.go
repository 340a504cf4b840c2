package sluice

import (
	"context"
	"fmt"
)

// Limiter is what a [Throttle] waits on: anything with a Wait method that
// blocks until the next call may go, or returns an error. A
// *rate.Limiter from golang.org/x/time/rate is one.
type Limiter interface {
	Wait(ctx context.Context) error
}

// Throttle makes a stage wait on l before each call of its function —
// retries included — so that the calls keep to the rate l allows, however
// many workers the stage has: a stage that calls a rate-limited service
// needs a rate, not only a concurrency. [ForEachChunk] waits once per
// call, that is per chunk. It applies to stages whose function returns an
// error ([Map], [OrderedMap], [Filter], [FlatMap], [ForEach],
// [ForEachChunk]); any other stage panics when given it. It is a step of
// the call chain, not an error option: a failed call is settled as it is
// without Throttle.
//
// The wait is passed the pipeline's context, so it ends when the pipeline
// stops. It does not count against a [Timeout], nor as the stage's work:
// it is counted per worker as StageStats.Throttled (and an [Auto] stage
// does not add workers that would only wait on l). An error from Wait
// while the pipeline runs (a *rate.Limiter's when its burst is below 1,
// say) fails the pipeline, as a [*StageError] wrapping it, whatever the
// stage's error options: it says that the limiter is unusable, not that an
// item failed. A stage given Throttle(nil) panics.
func Throttle(l Limiter) StageOption {
	if l == nil {
		return invalid(fitsFunction, "Throttle", "Throttle: nil Limiter")
	}
	return option(fitsFunction, fmt.Sprintf("Throttle(%T)", l), func(c *stageConfig) { c.calls.use(throttleStep{l}) })
}

// throttleStep waits on the limiter before each call, counting the time
// as the worker's throttled time, not as work or as waiting for input.
type throttleStep struct{ l Limiter }

func (throttleStep) rank() int { return rankThrottle }

func (t throttleStep) wrap(next call, at *site) call {
	return func(ctx context.Context) error {
		at.w.waitThrottle()
		err := t.l.Wait(ctx)
		at.w.resume()
		switch {
		case at.p.stopping():
			return errStopped
		case err != nil:
			at.fail(fmt.Errorf("Throttle: %w", err))
			return errStopped
		}
		return next(ctx)
	}
}
