package sluice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Pipeline is a scope that owns every goroutine its stages start. Create one
// with [New], add stages with the top-level stage functions, then call
// [Pipeline.Wait]. The zero value is not usable.
//
// The first error returned by a stage's function, or the first panic in one,
// cancels the scope's context; every stage then stops, and Wait returns that
// error. When Wait returns, no goroutine of the scope is running.
type Pipeline struct {
	ctx    context.Context
	parent context.Context // New's; a ToSeq loop checks it per item
	cancel context.CancelCauseFunc
	name   string
	start  time.Time
	tracer Tracer       // Tracing; nil: no spans
	log    *slog.Logger // Logger; nil: no logs

	// halt is set once the scope is cancelled and every stage is told to
	// stop; stages read it before each call of a user function. It sits on
	// its own cache line: it is read per item and written once.
	halt struct {
		_ [64]byte
		atomic.Bool
		_ [63]byte
	}

	// intake is closed, and noIntake set, when sources must stop taking
	// input: on Drain, or on a stop. Sources read noIntake per item.
	noIntake struct {
		_ [64]byte
		atomic.Bool
		_ [63]byte
	}
	intake     chan struct{}
	intakeOnce sync.Once
	// drainAt is when the intake closed: written before noIntake is set
	// and intake closed, read only after seeing either. Retries wait for
	// grace after it at most (DrainGrace).
	drainAt time.Time
	grace   time.Duration

	afterStops  []func() bool  // AfterFuncs to stop at Wait (halt on cancel, DrainOn); guarded by mu
	afters      sync.WaitGroup // those AfterFuncs neither stopped nor finished
	finishers   []func()       // run by Wait once every goroutine has exited (onFinish); guarded by mu
	graceLogged sync.Once      // logGraceOver

	wg      sync.WaitGroup
	errOnce sync.Once
	err     error

	mu       sync.Mutex // guards stages, names, edges and sealed
	stages   []*stage
	names    map[string]bool
	edges    []edgeInfo
	sealed   bool
	waitErr  error
	finished time.Time // when the last goroutine had exited; set before waited closes
	waited   chan struct{}
}

// New returns a pipeline scope whose stages run until their inputs are
// exhausted, a stage fails, or ctx is cancelled.
func New(ctx context.Context, opts ...Option) *Pipeline {
	if ctx == nil {
		panic("sluice: New called with a nil context")
	}
	cfg := config{grace: DefaultDrainGrace}
	for i, o := range opts {
		if o == nil {
			panic(fmt.Sprintf("sluice: New: Option %d is nil", i))
		}
		o.apply(&cfg)
	}
	if cfg.name == "" {
		cfg.name = fmt.Sprintf("pipeline-%d", unnamed.Add(1))
	}
	c, cancel := context.WithCancelCause(ctx)
	p := &Pipeline{ctx: c, parent: ctx, cancel: cancel, name: cfg.name, start: time.Now(),
		waited: make(chan struct{}), intake: make(chan struct{}), grace: cfg.grace,
		tracer: cfg.tracer, log: cfg.logger}
	// A cancelled parent raises halt at once, so that a stage busy with a
	// chunk notices it before its next item, not at its next wait.
	p.afterFunc(c, func() {
		p.halt.Store(true)
		p.closeIntake(nil)
	})
	return p
}

// afterFunc runs f in a goroutine of the scope once ctx is done, as
// context.AfterFunc does; Wait stops it, or waits for it if it has
// started, so that it does not outlive Wait. Called before Wait, with p.mu
// held or before p is shared.
func (p *Pipeline) afterFunc(ctx context.Context, f func()) {
	p.afters.Add(1)
	p.afterStops = append(p.afterStops, context.AfterFunc(ctx, func() {
		defer p.afters.Done()
		f()
	}))
}

// mustBeMade panics unless p was made by New: a nil or zero *Pipeline is
// programmer error, and would otherwise crash a stage's goroutine.
func (p *Pipeline) mustBeMade(what string) {
	if p == nil || p.ctx == nil {
		kind := "zero"
		if p == nil {
			kind = "nil"
		}
		panic(fmt.Sprintf("sluice: %s called with a %s *Pipeline; create one with sluice.New", what, kind))
	}
}

// Name returns the pipeline's name (see [Named]). A pipeline not named is
// "pipeline-N", N counting such pipelines from 1 in the process, so that
// two are told apart in every message, snapshot and metric.
func (p *Pipeline) Name() string { return p.name }

// Context returns the scope's context: it is cancelled when a stage fails,
// when the parent context is cancelled, or after Wait returns.
func (p *Pipeline) Context() context.Context { return p.ctx }

// Wait blocks until every stage has finished, then returns the first error
// (nil when every source was exhausted and every sink consumed its input).
// A panic in a stage is returned as a [*PanicError]; an error from a stage's
// function as a [*StageError] wrapping it; a runtime.Goexit in one as a
// [*StageError] wrapping [ErrGoexit]; cancellation of the parent context,
// before every goroutine has exited, as the parent's cause.
//
// Wait must be called exactly once the pipeline is built; calling it again
// returns the same result. Adding a stage after Wait was called panics. A
// stream that no stage consumes would block its producer forever, so Wait
// panics, after cancelling the scope and letting every goroutine exit, if
// any stream is left unconsumed.
func (p *Pipeline) Wait() error {
	p.mustBeMade("Wait")
	p.mu.Lock()
	if p.sealed {
		p.mu.Unlock()
		<-p.waited
		return p.waitErr
	}
	p.sealed = true
	var dangling []string
	for _, e := range p.edges {
		if e.consumer() == nil {
			dangling = append(dangling, describeEdge(e))
		}
	}
	p.mu.Unlock()

	if len(dangling) > 0 {
		p.cancel(errDangling)
	}
	p.wg.Wait()
	p.mu.Lock()
	for _, stop := range p.afterStops {
		if stop() { // it will never run
			p.afters.Done()
		}
	}
	p.mu.Unlock()
	p.afters.Wait() // those that had started
	p.cancel(nil)
	p.waitErr = p.err
	p.finish()
	p.finished = time.Now()
	close(p.waited)
	if len(dangling) > 0 {
		panic(fmt.Sprintf("sluice: pipeline %q: %s is never consumed; every stream must feed a stage or sink", p.name, dangling[0]))
	}
	return p.waitErr
}

// onFinish registers f to run when Wait has seen every goroutine exit.
func (p *Pipeline) onFinish(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishers = append(p.finishers, f)
}

// finish runs the onFinish functions and logs the pipeline's end; Wait
// calls it once, after every goroutine has exited.
func (p *Pipeline) finish() {
	p.mu.Lock()
	fs := p.finishers
	p.mu.Unlock()
	for _, f := range fs {
		f()
	}
	p.logFinished()
}

// unnamed counts the pipelines made without a name.
var unnamed atomic.Int64

var errDangling = errors.New("sluice: a stream is never consumed")

// fail records err as the pipeline's error if it is the first, and cancels
// the scope. A failure after the parent context was cancelled (a panic in a
// function that saw it, say) comes after that stop: the parent's cause is
// recorded instead, as settle does for errors returned then.
func (p *Pipeline) fail(err error) {
	p.errOnce.Do(func() {
		cancelled := false
		if c := context.Cause(p.ctx); c != nil {
			err, cancelled = c, true
		}
		p.err = err
		switch {
		case cancelled:
			p.logAt(slog.LevelInfo, "pipeline cancelled", slog.String("cause", err.Error()))
		case err != errIncomplete && err != errDangling:
			p.logFailed(err)
		}
		// halt before cancel: a function that returns because the
		// context is done must find halt already set, or its stage would
		// go on to the next item.
		p.halt.Store(true)
		p.closeIntake(nil)
		p.cancel(err)
	})
}

// halted reports whether the scope has failed or been cancelled: an
// atomic load of halt, then one of the scope context's error, cheap enough
// per item (about a nanosecond). A failure sets halt before it cancels
// the context; a cancel of the parent reaches the scope's context before
// the parent's cancel returns, so a stage sees it at its next item, not
// once the AfterFunc that raises halt has run.
func (p *Pipeline) halted() bool { return p.halt.Load() || p.ctx.Err() != nil }

// stopping is halted; stages check it once per chunk and before they
// wait.
func (p *Pipeline) stopping() bool { return p.halted() }

// addStage registers a stage; it panics if the pipeline is already waited on.
func (p *Pipeline) addStage(s *stage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sealed {
		panic(fmt.Sprintf("sluice: stage %q added to pipeline %q after Wait was called", s.name, p.name))
	}
	if p.names[s.name] {
		panic(fmt.Sprintf("sluice: stage name %q is already used in pipeline %q; names identify stages in stats and metrics", s.name, p.name))
	}
	if p.names == nil {
		p.names = make(map[string]bool)
	}
	p.names[s.name] = true
	p.stages = append(p.stages, s)
}

// addEdge registers e as an output of stage from.
func (p *Pipeline) addEdge(from *stage, e edgeInfo) {
	p.mu.Lock()
	defer p.mu.Unlock()
	from.outs = append(from.outs, e)
	p.edges = append(p.edges, e)
}

// cause is the reason the scope is stopping: the first stage error, or
// the parent context's cause; nil while it runs.
func (p *Pipeline) cause() error {
	if c := context.Cause(p.ctx); c != nil {
		return c
	}
	if p.halt.Load() { // set after p.err, just before the cancel lands
		return p.err
	}
	return nil
}
