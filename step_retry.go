package sluice

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Retry makes a stage call its function up to attempts times for an item
// while it returns an error, waiting between calls with exponential backoff
// and full jitter: before retry k, a random time in [0, min(maxDelay,
// base·2^(k-1))). A wait ends at once when the pipeline stops. An error
// marked [Permanent] is not retried; an error after the pipeline stopped
// is not either. Retries are counted (StageStats.Retries). A drain bounds
// them: once the pipeline's [DrainGrace] has passed since the drain
// began, a waiting backoff ends and the item is settled with its last
// error, as after its last attempt. The error an item is settled with
// (a [Failed] item's Err, or the one that fails the pipeline) says how
// many attempts were made and whether a drain ended them, and wraps the
// function's last error, which errors.Is and errors.As see. A stage given
// Retry with attempts < 1, base < 0 or maxDelay < base panics.
//
// For [FlatMap], a retried call emits again what it emitted before it
// failed; for [ForEachChunk], the call is retried with the items that
// failed (see [ItemErrors]).
func Retry(attempts int, base, maxDelay time.Duration) StageOption {
	if attempts < 1 {
		return invalid(fitsFunction, "Retry", fmt.Sprintf("Retry: attempts must be ≥ 1, got %d", attempts))
	}
	if base < 0 || maxDelay < base {
		return invalid(fitsFunction, "Retry", fmt.Sprintf("Retry: want 0 ≤ base ≤ maxDelay, got base %v, maxDelay %v", base, maxDelay))
	}
	show := fmt.Sprintf("Retry(%d, %v, %v)", attempts, base, maxDelay)
	return option(fitsFunction, show, func(c *stageConfig) {
		c.calls.use(&retryStep{attempts: attempts, base: base, maxDelay: maxDelay})
	})
}

// retryStep calls what follows it again while the call fails and the
// policy allows.
type retryStep struct {
	attempts       int // calls per item, ≥ 1
	base, maxDelay time.Duration
}

func (*retryStep) rank() int { return rankRetry }

func (r *retryStep) wrap(next call, at *site) call {
	return func(ctx context.Context) error {
		err := next(ctx)
		if err == nil || err == errStopped || r.attempts == 1 {
			return err
		}
		return r.again(ctx, at, next, err)
	}
}

// again retries a call that failed with err. It returns nil when a call
// succeeded, errStopped when the pipeline stopped meanwhile, or the last
// error, as a *retryError when more than one call was made or a drain
// ended the retries.
func (r *retryStep) again(ctx context.Context, at *site, next call, err error) error {
	p := at.p
	made, drained := 1, false
	for made < r.attempts && !IsPermanent(err) {
		if p.stopping() {
			return errStopped
		}
		if !r.backoff(ctx, p, made) {
			drained = !p.stopping()
			if drained {
				p.logGraceOver()
			}
			break
		}
		if at.w.room != nil {
			at.w.room(ctx) // Auto: shed workers finishing their items make room first
		}
		if p.halted() {
			return errStopped // no call once the pipeline has stopped
		}
		at.w.retries.Add(1)
		made++
		if err = next(ctx); err == nil || err == errStopped {
			return err
		}
	}
	if p.stopping() {
		return errStopped
	}
	if made == 1 && !drained {
		return err // permanent at once: no retry to speak of
	}
	return &retryError{attempts: made, drained: drained, exhausted: made == r.attempts && !IsPermanent(err), err: err}
}

// backoff waits before retry k (k ≥ 1): a random time below
// min(maxDelay, base·2^(k-1)). It returns false, and retries end, if the
// pipeline stopped or a drain's grace period (DrainGrace) has passed: a
// drain that begins during the wait cuts it to the end of the grace.
func (r *retryStep) backoff(ctx context.Context, p *Pipeline, k int) bool {
	if p.retriesOver() {
		return false
	}
	ceil := r.maxDelay
	if k-1 < 62 && r.base < r.maxDelay>>(k-1) {
		ceil = r.base << (k - 1)
	}
	if ceil <= 0 {
		return true
	}
	t := time.NewTimer(rand.N(ceil))
	defer t.Stop()
	drain := p.intake // closed when a drain (or a stop) begins
	var graceOver <-chan time.Time
	for {
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		case <-drain:
			drain = nil
			g := time.NewTimer(p.graceLeft())
			defer g.Stop()
			graceOver = g.C
		case <-graceOver:
			return false
		}
	}
}

// retryError is the last error of an item that Retry called more than
// once, or whose retries a drain ended: it says so, and unwraps to the
// function's error.
type retryError struct {
	attempts  int
	drained   bool // a drain's grace period ended the retries
	exhausted bool // every attempt was made
	err       error
}

func (e *retryError) Error() string {
	switch {
	case e.drained:
		return fmt.Sprintf("retries ended by a drain after %s: %v", plural(e.attempts, "attempt"), e.err)
	case e.exhausted:
		return fmt.Sprintf("gave up after %s: %v", plural(e.attempts, "attempt"), e.err)
	}
	return fmt.Sprintf("failed for good after %s: %v", plural(e.attempts, "attempt"), e.err)
}

func (e *retryError) Unwrap() error { return e.err }

// attemptsOf returns how many calls err, a call chain's error, says were
// made: a retryError's count, else one.
func attemptsOf(err error) int {
	var re *retryError
	if errors.As(err, &re) {
		return re.attempts
	}
	return 1
}

// plural says n things: "1 attempt", "3 attempts".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
