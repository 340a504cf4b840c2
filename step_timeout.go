package sluice

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Timeout gives each call of a stage's function a context that expires
// after d. A call that returns an error after its deadline has a failed
// item, settled under the stage's policy (retried with [Retry], skipped,
// dead-lettered, or failing the pipeline); its error says that the call
// took longer than its Timeout and wraps the function's error (errors.Is
// sees context.DeadlineExceeded when the function returned ctx.Err()).
// A call is not abandoned: a function that ignores its context runs to
// its end, and its result is kept if it returns no error. Costs a context
// and a timer per call: one to two microseconds. A stage given Timeout(d)
// with d ≤ 0 panics.
func Timeout(d time.Duration) StageOption {
	if d <= 0 {
		return invalid(fitsFunction, "Timeout", fmt.Sprintf("Timeout must be > 0, got %v", d))
	}
	return option(fitsFunction, fmt.Sprintf("Timeout(%v)", d), func(c *stageConfig) { c.calls.use(timeoutStep{d}) })
}

// timeoutStep gives each call a context that expires after d.
type timeoutStep struct{ d time.Duration }

func (timeoutStep) rank() int { return rankTimeout }

func (t timeoutStep) wrap(next call, _ *site) call {
	return func(ctx context.Context) error {
		c, cancel := context.WithTimeout(ctx, t.d)
		err := next(c)
		cancel()
		if err != nil && err != errStopped {
			err = timedOut(ctx, c, t.d, err)
		}
		return err
	}
}

// timedOut returns err, the error of a call given c, a context that
// expires after d: wrapped so that it says the call timed out if c's
// deadline passed while ctx, the stage's, is live.
func timedOut(ctx, c context.Context, d time.Duration, err error) error {
	if ctx.Err() == nil && errors.Is(c.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("call took longer than its Timeout(%v): %w", d, err)
	}
	return err
}
