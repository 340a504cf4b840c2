package sluice

import (
	"cmp"
	"context"
	"errors"
	"reflect"
	"slices"
)

// A stage is a loop, a call chain and a sender (see docs/internals.md):
// the engine's loop (engine.go) takes the input's chunks, the stage's body
// calls its function on each item through its worker's call chain, and
// the worker's senders hand the results on. The chain runs around each
// call, outermost first: span → retry → throttle → timeout → f,
// then dispose (skip or dead-letter, then settle) for an error that
// survives them. Each step is a small type in a file of its
// own (step_*.go); a worker builds its chain once, when it starts. A stage
// body has one loop, which checks the halt flag and makes one call per
// item, whether the stage has a chain or not (callOf): a stage whose
// options add no step has no chain, and that call is then its function.

// call is one call of a stage's function on the item at hand, as a step
// sees it: ctx is the context the call gets (a step may pass on another,
// as Timeout does), and it returns the function's error or a step's.
// errStopped says the pipeline is stopping: every step hands it on as it
// is, and a step that must fail the pipeline whatever the stage's policy
// (Throttle's unusable limiter) calls site.fail and returns it.
type call func(ctx context.Context) error

// step is one per-call concern. An option makes it (cfg.calls.use), the
// stage's workers share it, and each worker calls wrap once, as it
// starts, to put the concern around next: what a step keeps per worker
// lives in the function wrap returns, and nothing is allocated per call.
// rank places it in the chain: a step wraps every step of a higher rank
// and the function, so a retry (rankRetry) repeats the throttle and the
// timeout.
type step interface {
	rank() int
	wrap(next call, at *site) call
}

// The ranks of the steps, outermost first.
const (
	rankSpan     = 50  // a span per call of the stage on an item, retries inside
	rankRetry    = 100 // repeats what follows while the call fails
	rankThrottle = 300 // waits on the limiter before each call
	rankTimeout  = 400 // the call's context expires
)

// site is what the steps of one worker's chain know of where they run.
type site struct {
	p *Pipeline
	s *stage
	w *worker
	// receipts calls visit with each receipt the item at hand carries
	// (none when its type carries none; every item's for a call on a
	// chunk or batch): a step that traces calls continues the items'
	// traces through them. items is how many items the call handles.
	receipts func(visit func(Receipt))
	items    func() int
	chunked  bool // a call on a chunk's items (ForEachChunk): its worker's tin holds their traces (see traceSlot)
}

// fail fails the pipeline with err, as the stage's error, past its error
// policy; the step then returns errStopped.
func (at *site) fail(err error) { at.p.fail(&StageError{Stage: at.s.name, Err: err}) }

// callConfig is what a stage's options say of its call chain: the steps,
// and what becomes of an item whose call failed for good.
type callConfig struct {
	steps []step
	skip  bool // SkipErrors
	dead  any  // *Stream[Failed[T]], from DeadLetter
}

// use puts st in the chain, in place of a step of its rank given before.
func (c *callConfig) use(st step) {
	for i, s := range c.steps {
		if s.rank() == st.rank() {
			c.steps[i] = st
			return
		}
	}
	c.steps = append(c.steps, st)
}

// errDisposed is what a chain returns for an item whose call failed and
// that its dispose step took (skipped or dead-lettered): the stage hands
// nothing on for it.
var errDisposed = errors.New("sluice: disposed of as failed")

// disposal takes an item of type X whose call failed for good: it skips
// or dead-letters it (step_dispose.go) and returns errDisposed, or
// errStopped.
type disposal[X any] interface {
	dispose(v *X, err error) error
	sends() bool // it hands dead letters on: flush and flushHeld have work to do
	flush() bool
	flushHeld(start, now int64) bool
}

// calls is a stage's call chain as its options make it, shared by its
// workers; nil when the options add no step and no dispose.
type calls[X any] struct {
	p       *Pipeline
	s       *stage
	steps   []step // outermost first
	chunked bool   // a call is on a chunk's items (see site.chunked)
}

// newCalls returns stage s's calls from c, or nil when there is nothing
// around the call: no step, and not chained (chained: the stage has a
// dispose step, or calls per chunk and always has a chain).
func newCalls[X any](p *Pipeline, s *stage, c callConfig, chained bool) *calls[X] {
	if len(c.steps) == 0 && !chained && p.tracer == nil {
		return nil
	}
	steps := slices.Clone(c.steps)
	if p.tracer != nil {
		steps = append(steps, spanStep{p.tracer})
	}
	slices.SortStableFunc(steps, func(a, b step) int { return cmp.Compare(a.rank(), b.rank()) })
	return &calls[X]{p: p, s: s, steps: steps}
}

// callOf returns what worker w of a stage calls for each item, and its
// chain: f itself when the stage has no chain (cs nil: the bare call,
// which the body's loop calls directly, as it would f), else a call of f
// through the chain that ends in d (nil: a failed item fails the
// pipeline). A body checks p.halted() before each call, then makes it: a
// call through the chain returns f's result, or errDisposed (the item
// failed and dispose took it), errStopped, or the error that fails the
// pipeline.
func callOf[X, U any](cs *calls[X], w *worker, d disposal[X], f func(context.Context, X) (U, error)) (func(context.Context, X) (U, error), *chain[X]) {
	if cs == nil {
		return f, nil
	}
	var (
		cur X // the item of the call under way, which the chain's steps read
		res U
	)
	ch := cs.worker(w, func(ctx context.Context, v *X) (err error) {
		res, err = f(ctx, *v)
		return err
	}, d)
	return func(ctx context.Context, v X) (U, error) {
		cur = v
		err := ch.run(ctx, &cur)
		u := res
		cur, res = *new(X), *new(U) // keep nothing alive
		return u, err
	}, ch
}

// sinkCallOf is callOf for a function with no result (ForEach's).
func sinkCallOf[X any](cs *calls[X], w *worker, d disposal[X], f func(context.Context, X) error) (func(context.Context, X) error, *chain[X]) {
	if cs == nil {
		return f, nil
	}
	var cur X // as in callOf
	ch := cs.worker(w, func(ctx context.Context, v *X) error { return f(ctx, *v) }, d)
	return func(ctx context.Context, v X) error {
		cur = v
		err := ch.run(ctx, &cur)
		cur = *new(X)
		return err
	}, ch
}

// chain is one worker's call chain.
type chain[X any] struct {
	cur     *X // the item of the call under way
	call    call
	dispose disposal[X] // nil: a failed item fails the pipeline
	at      site
}

// worker builds worker w's chain around f, the stage's function on an
// item, ending in d (nil: none); nil when cs is.
func (cs *calls[X]) worker(w *worker, f func(ctx context.Context, v *X) error, d disposal[X]) *chain[X] {
	if cs == nil {
		return nil
	}
	c := &chain[X]{dispose: d, at: site{p: cs.p, s: cs.s, w: w, chunked: cs.chunked}}
	c.at.receipts, c.at.items = visitorOf(&c.cur), countOf(&c.cur)
	next := call(func(ctx context.Context) error {
		err := f(ctx, c.cur)
		if err != nil {
			w.callFailed()
		}
		return err
	})
	for k := len(cs.steps) - 1; k >= 0; k-- {
		next = cs.steps[k].wrap(next, &c.at)
	}
	c.call = next
	return c
}

// run calls the stage's function on *v through the chain. It returns nil
// when a call succeeded, errDisposed when the item failed and dispose took it,
// errStopped when the pipeline is stopping, or the error that fails it.
func (c *chain[X]) run(ctx context.Context, v *X) error {
	c.cur = v
	err := c.call(ctx)
	c.cur = nil
	if err == nil || err == errStopped || c.dispose == nil {
		return err
	}
	return c.dispose.dispose(v, err)
}

// flush hands on the worker's partial chunk of dead letters; true when
// there is none.
func (c *chain[X]) flush() bool { return c == nil || c.dispose == nil || c.dispose.flush() }

// flushHeld hands on the worker's dead letters if they were held too long
// (see sender.flushHeld).
func (c *chain[X]) flushHeld(start, now int64) bool {
	return c == nil || c.dispose == nil || c.dispose.flushHeld(start, now)
}

// withFlush returns a function that flushes out (if any) and then c's dead
// letters: nil when there is neither.
func withFlush[X any](out func() bool, c *chain[X]) func() bool {
	if c == nil || c.dispose == nil || !c.dispose.sends() {
		return out
	}
	if out == nil {
		return c.flush
	}
	return func() bool { return out() && c.flush() }
}

// withHeld is withFlush for the body's held function: nil when there is
// nothing to hand on, so that a stage with neither reads no clock per
// chunk.
func withHeld[X any](out func(start, now int64) bool, c *chain[X]) func(start, now int64) bool {
	if c == nil || c.dispose == nil || !c.dispose.sends() {
		return out
	}
	if out == nil {
		return c.flushHeld
	}
	return func(start, now int64) bool { return out(start, now) && c.flushHeld(start, now) }
}

// visitorOf returns a function that visits the receipts of the item *cur
// points to (see site.receipts).
func visitorOf[X any](cur **X) func(visit func(Receipt)) {
	rc := receiptsOf[X]()
	if rc == nil {
		return func(func(Receipt)) {}
	}
	return func(visit func(Receipt)) {
		if *cur != nil {
			rc(*cur, settleOp{visit: visit})
		}
	}
}

// countOf returns a function that counts the items of the call at hand:
// the length of *cur when X is a slice (a chunk or batch), else 1.
func countOf[X any](cur **X) func() int {
	if reflect.TypeFor[X]().Kind() != reflect.Slice {
		return func() int { return 1 }
	}
	return func() int {
		if *cur == nil {
			return 0
		}
		return reflect.ValueOf(*cur).Elem().Len()
	}
}
