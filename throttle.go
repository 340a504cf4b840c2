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
// [ForEachChunk]); any other stage panics when given it.
//
// The wait is passed the pipeline's context, so it ends when the pipeline
// stops. It does not count against a [Timeout], nor as the stage's work:
// it is counted per worker as StageStats.Throttled (and an [Auto] stage
// does not add workers that would only wait on l). An error from Wait
// while the pipeline runs (a *rate.Limiter's when its burst is below 1,
// say) fails the pipeline, as a [*StageError] wrapping it, whatever the
// stage's error options: it says that the limiter is unusable, not that an
// item failed. Panics if l is nil.
func Throttle(l Limiter) StageOption {
	if l == nil {
		panic("sluice: Throttle: nil Limiter")
	}
	return stageOptionFunc(func(c *stageConfig) { c.errs.throttle = l })
}

// errThrottle marks an error from a Throttle's Wait, which fails the
// pipeline past the stage's error policy.
type errThrottle struct{ err error }

func (e *errThrottle) Error() string { return fmt.Sprintf("Throttle: %v", e.err) }
func (e *errThrottle) Unwrap() error { return e.err }

// throttle waits on the stage's limiter, if it has one, counting the time
// as the worker's throttled time. It returns errStopped when the pipeline
// stopped meanwhile, or the limiter's error.
func (h *onError[T]) throttle(ctx context.Context) error {
	if h == nil || h.pol.cfg.throttle == nil {
		return nil
	}
	h.w.waitThrottle()
	err := h.pol.cfg.throttle.Wait(ctx)
	h.w.resume()
	switch {
	case h.pol.p.stopping():
		return errStopped
	case err != nil:
		return &errThrottle{err}
	}
	return nil
}

// isThrottleErr reports whether err came from a Throttle's Wait: no
// error policy settles it.
func isThrottleErr(err error) bool {
	_, ok := err.(*errThrottle)
	return ok
}
