package sluice

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"
)

// Failed is an item whose stage function failed, as a dead-letter stream
// carries it (see [DeadLetter]).
type Failed[T any] struct {
	Item     T      // the input the function failed on
	Err      error  // the last error the function returned
	Stage    string // the stage's name
	Attempts int    // calls made, retries included
}

// Permanent marks err as not worth retrying: a stage with [Retry] settles
// the item at once under its error policy. errors.Is and errors.As see
// through the mark. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// IsPermanent reports whether err was marked by [Permanent].
func IsPermanent(err error) bool {
	var pe *permanentError
	return errors.As(err, &pe)
}

// errorConfig is a stage's per-item error policy, from its options.
type errorConfig struct {
	skip     bool
	dead     any // *Stream[Failed[T]], from DeadLetter
	attempts int // calls per item, ≥ 1; 0: not set (1)
	base     time.Duration
	maxDelay time.Duration
	timeout  time.Duration
	throttle Limiter // Throttle's limiter (throttle.go); nil: none
}

func (c errorConfig) set() bool {
	return c.skip || c.dead != nil || c.attempts > 1 || c.timeout > 0 || c.throttle != nil
}

// SkipErrors makes a stage settle an item whose function failed by
// dropping it and counting it (StageStats.Failed), instead of failing the
// pipeline; the item's receipts are acknowledged (see [Receipt]). With
// [Retry], the item is dropped after its last attempt.
func SkipErrors() StageOption {
	return stageOptionFunc(func(c *stageConfig) { c.errs.skip = true })
}

// DeadLetter makes a stage route each item whose function failed to a
// stream of [Failed] items, which the stage stores in *dst when it is
// built; consume it like any other stream (a dead-letter stream nobody
// consumes makes Wait panic, so no failure is dropped silently). T must be
// the stage's input type: the stage panics otherwise. Failed items are
// counted (StageStats.Failed). Dead letters are handed on as the stage's
// results are (see "Batching and latency" in the package documentation):
// a failure is not held back behind a busy stage's later items. The
// stream closes when the stage's workers have exited. A [Failed] item
// carries the receipts of its Item: the dead-letter stream's sink
// acknowledges them once it has stored it.
func DeadLetter[T any](dst *Stream[Failed[T]]) StageOption {
	if dst == nil {
		panic("sluice: DeadLetter: nil destination")
	}
	return stageOptionFunc(func(c *stageConfig) { c.errs.dead = dst })
}

// Retry makes a stage call its function up to attempts times for an item
// while it returns an error, waiting between calls with exponential backoff
// and full jitter: before retry k, a random time in [0, min(maxDelay,
// base·2^(k-1))). A wait ends at once when the pipeline stops. An error
// marked [Permanent] is not retried; an error after the pipeline stopped
// is not either. Retries are counted (StageStats.Retries). A drain bounds
// them: once the pipeline's [DrainGrace] has passed since the drain
// began, a waiting backoff ends and the item is settled with its last
// error, as after its last attempt. Panics if attempts < 1, base < 0 or
// maxDelay < base.
//
// For [FlatMap], a retried call emits again what it emitted before it
// failed; for [ForEachChunk], the whole call is retried.
func Retry(attempts int, base, maxDelay time.Duration) StageOption {
	if attempts < 1 {
		panic(fmt.Sprintf("sluice: Retry: attempts must be ≥ 1, got %d", attempts))
	}
	if base < 0 || maxDelay < base {
		panic(fmt.Sprintf("sluice: Retry: want 0 ≤ base ≤ maxDelay, got base %v, maxDelay %v", base, maxDelay))
	}
	return stageOptionFunc(func(c *stageConfig) {
		c.errs.attempts, c.errs.base, c.errs.maxDelay = attempts, base, maxDelay
	})
}

// Timeout gives each call of a stage's function a context that expires
// after d. A call that returns an error after its deadline has a failed
// item, settled under the stage's policy (retried with [Retry], skipped,
// dead-lettered, or failing the pipeline); its error says that the call
// took longer than its Timeout and wraps the function's error (errors.Is
// sees context.DeadlineExceeded when the function returned ctx.Err()).
// A call is not abandoned: a function that ignores its context runs to
// its end, and its result is kept if it returns no error. Costs a context
// and a timer per call: one to two microseconds. Panics if d ≤ 0.
func Timeout(d time.Duration) StageOption {
	if d <= 0 {
		panic(fmt.Sprintf("sluice: Timeout must be > 0, got %v", d))
	}
	return stageOptionFunc(func(c *stageConfig) { c.errs.timeout = d })
}

// noErrorPolicy panics if a stage without a function was given an error
// option.
func noErrorPolicy(kind, name string, cfg stageConfig) {
	noAuto(kind, name, cfg)
	if cfg.errs.set() {
		panic(fmt.Sprintf("sluice: %s %q: SkipErrors, DeadLetter, Retry, Timeout and Throttle apply only to stages with a function that returns an error", kind, name))
	}
}

// policy is a stage's per-item error policy, shared by its workers; nil
// means fail the pipeline on the first error (the default).
type policy[T any] struct {
	p     *Pipeline
	s     *stage
	cfg   errorConfig
	dead  *edge[Failed[T]]
	tries int
	// receipts acknowledges a skipped item's receipts; nil when T
	// carries none.
	receipts receipts[T]
}

// newPolicy returns stage s's error policy for items of type T, or nil
// when the stage fails on the first error. It makes the dead-letter edge,
// an output of s written by its n workers.
func newPolicy[T any](p *Pipeline, s *stage, n int, cfg errorConfig) *policy[T] {
	if !cfg.set() {
		return nil
	}
	pol := &policy[T]{p: p, s: s, cfg: cfg, tries: max(1, cfg.attempts), receipts: receiptsOf[T]()}
	if cfg.dead != nil {
		dst, ok := cfg.dead.(*Stream[Failed[T]])
		if !ok {
			panic(fmt.Sprintf("sluice: stage %q: DeadLetter gets %s, but the stage's items are %v: want *sluice.Stream[sluice.Failed[%v]]",
				s.name, reflect.TypeOf(cfg.dead), reflect.TypeFor[T](), reflect.TypeFor[T]()))
		}
		pol.dead = newEdge[Failed[T]](p, s, n, stageConfig{})
		pol.dead.deadLetters = true
		*dst = Stream[Failed[T]]{pol.dead}
	}
	return pol
}

// onError is worker i's end of its stage's policy; a nil *onError fails
// the pipeline on the first error.
type onError[T any] struct {
	pol  *policy[T]
	dead *sender[Failed[T]]
	w    *worker
}

func (pol *policy[T]) worker(i int, w *worker) *onError[T] {
	if pol == nil {
		return nil
	}
	h := &onError[T]{pol: pol, w: w}
	if pol.dead != nil {
		h.dead = newSender(pol.dead, i, w)
	}
	return h
}

// flush hands on the worker's partial chunk of dead letters.
func (h *onError[T]) flush() bool {
	if h == nil || h.dead == nil {
		return true
	}
	return h.dead.flush()
}

// flushHeld hands on the worker's partial chunk of dead letters if it has
// held them too long (see sender.flushHeld): dead letters follow the hold
// rule of a stage's main output.
func (h *onError[T]) flushHeld(start, now int64) bool {
	return h.dead.flushHeld(start, now)
}

// withHeld returns the body's held function for a stage whose main output
// (if any) hands on held items with out, and whose dead letters go
// through h: nil when there is nothing to hand on, so that a stage with
// neither reads no clock per chunk.
func withHeld[T any](out func(start, now int64) bool, h *onError[T]) func(start, now int64) bool {
	if h == nil || h.dead == nil {
		return out
	}
	if out == nil {
		return h.flushHeld
	}
	return func(start, now int64) bool { return out(start, now) && h.flushHeld(start, now) }
}

// withFlush returns a function that flushes out and then h's dead letters.
func withFlush[T any](out func() bool, h *onError[T]) func() bool {
	if h == nil || h.dead == nil {
		return out
	}
	if out == nil {
		return h.flush
	}
	return func() bool { return out() && h.flush() }
}

// failed settles item v, whose call returned err: it retries the call
// (again) while the policy allows, then skips or dead-letters the item.
// It returns ok when a retry succeeded; otherwise a nil error when the
// item was settled, errStopped when the pipeline is stopping, or the error
// that fails the pipeline. Only the error path comes here.
func (h *onError[T]) failed(ctx context.Context, v T, err error, again func(context.Context) error) (ok bool, _ error) {
	if h == nil {
		return false, err
	}
	h.w.callFailed()
	ok, attempts, err := h.retry(ctx, err, again)
	if ok || err == errStopped || isThrottleErr(err) {
		return ok, err
	}
	return false, h.settle(v, err, attempts)
}

// retry calls again while the call fails and the policy allows. It returns
// ok when a call succeeded, else the last error and the calls made
// (errStopped if the pipeline stopped meanwhile).
func (h *onError[T]) retry(ctx context.Context, err error, again func(context.Context) error) (ok bool, attempts int, _ error) {
	p := h.pol.p
	attempts = 1
	for ; attempts < h.pol.tries && !IsPermanent(err); attempts++ {
		if p.stopping() || !h.backoff(ctx, attempts) {
			break // stopped, or a drain's grace period is over: see below
		}
		h.w.retries.Add(1)
		if err = h.throttle(ctx); err != nil {
			return false, attempts, err
		}
		if err = again(ctx); err == nil {
			return true, attempts + 1, nil
		}
		h.w.callFailed()
	}
	if p.stopping() {
		return false, attempts, errStopped
	}
	return false, attempts, err
}

// settle skips or dead-letters item v after its last failed call, or
// returns err when the stage fails the pipeline on errors.
func (h *onError[T]) settle(v T, err error, attempts int) error {
	switch {
	case h.dead != nil:
		h.w.failed.Add(1)
		if !h.dead.send(Failed[T]{Item: v, Err: err, Stage: h.pol.s.name, Attempts: attempts}) {
			return errStopped
		}
		return nil
	case h.pol.cfg.skip:
		h.w.failed.Add(1)
		if h.pol.receipts != nil {
			h.pol.receipts(&v, ack)
		}
		return nil
	}
	return err
}

// backoff waits before retry k (k ≥ 1): a random time below
// min(maxDelay, base·2^(k-1)). It returns false, and retries end, if the
// pipeline stopped or a drain's grace period (DrainGrace) has passed: a
// drain that begins during the wait cuts it to the end of the grace.
func (h *onError[T]) backoff(ctx context.Context, k int) bool {
	p := h.pol.p
	if p.retriesOver() {
		return false
	}
	c := h.pol.cfg
	ceil := c.maxDelay
	if k-1 < 62 && c.base < c.maxDelay>>(k-1) {
		ceil = c.base << (k - 1)
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

// timed returns f with each call given a context that expires after d, or
// f itself when d is 0.
func timed[T, U any](f func(context.Context, T) (U, error), d time.Duration) func(context.Context, T) (U, error) {
	if d == 0 {
		return f
	}
	return func(ctx context.Context, v T) (U, error) {
		c, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		u, err := f(c, v)
		if err != nil {
			err = timedOut(ctx, c, d, err)
		}
		return u, err
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

// timedErr is timed for functions that return only an error.
func timedErr[T any](f func(context.Context, T) error, d time.Duration) func(context.Context, T) error {
	if d == 0 {
		return f
	}
	return func(ctx context.Context, v T) error {
		c, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		if err := f(c, v); err != nil {
			return timedOut(ctx, c, d, err)
		}
		return nil
	}
}

// retryCall is the error path of a stage whose function has the shape
// func(ctx, T) (U, error): it settles v under h and returns the result of a
// successful retry. It is a function of its own so that the stage's loop
// holds no closure.
func retryCall[T, U any](h *onError[T], ctx context.Context, f func(context.Context, T) (U, error), v T, err error) (u U, ok bool, _ error) {
	if h == nil {
		return u, false, err
	}
	ok, err = h.failed(ctx, v, err, func(ctx context.Context) (e error) {
		u, e = f(ctx, v)
		return e
	})
	return u, ok, err
}

// retryErr is the error path of a function with the shape
// func(ctx, T) error (see retryCall).
func retryErr[T any](h *onError[T], ctx context.Context, f func(context.Context, T) error, v T, err error) (ok bool, _ error) {
	if h == nil {
		return false, err
	}
	return h.failed(ctx, v, err, func(ctx context.Context) error { return f(ctx, v) })
}
