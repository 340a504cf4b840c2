package sluice

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

// stage is what a pipeline knows of one of its stages: its goroutines'
// timings and the edges it reads and writes.
type stage struct {
	name string
	kind stageKind
	// workers has a slot per goroutine the stage may run: n for a fixed
	// count, max for [Auto] (whose slots are filled as first used, under
	// p.mu, and nil until then). A slot's goroutine exits before the slot
	// is started again, so its counters have one writer at a time.
	workers []*worker
	ins     []edgeInfo // edges it consumes
	outs    []edgeInfo // edges it produces, closed when the last worker exits
	running atomic.Int32
	onDone  []func()  // run after outs are closed
	auto    *autoPool // the engine's choice of worker count; nil for a fixed count
	// extra adds what a stage kind reports of its own to a snapshot
	// (Keyed's keys, Window's event time); called with p.mu held.
	extra []func(st *StageStats)
	// conn is the connector the stage reads from or writes to
	// (AttachConnector), and connStats returns its counts; nil: none.
	// Set and called with p.mu held.
	conn      any
	connStats func() any
}

// newStage registers a stage with n ≥ 1 worker goroutines (the public
// constructors check n). It panics if p was not made by New or the name
// is empty.
func newStage(p *Pipeline, k stageKind, name string, n int) *stage {
	p.mustBeMade(fmt.Sprintf("%s %q", k, name))
	if name == "" {
		panic("sluice: " + k.String() + ": stage name must not be empty")
	}
	s := &stage{name: name, kind: k, workers: make([]*worker, n)}
	s.running.Store(int32(n))
	for i := range s.workers {
		s.workers[i] = &worker{slot: i}
	}
	p.addStage(s)
	return s
}

// openPool is the opening every stage with a worker pool and a function
// shares (Map, Filter, FlatMap, OrderedMap, ForEach, ForEachChunk): it
// checks the arguments that k's documentation names (n, a nil function,
// the options that fit k), registers the stage and consumes its input.
func openPool[T any](p *Pipeline, k stageKind, name string, in Stream[T], n int, nilFunc bool, opts []StageOption) (*stage, stageConfig, *edge[T]) {
	label := k.label()
	checkWorkers(label, name, n)
	checkFunc(label, name, nilFunc)
	cfg := stageOptions(k, name, opts)
	s := newPool(p, k, name, n, cfg)
	return s, cfg, consumeHolding(p, s, in, s.slots(), cfg.gather)
}

// newPool registers a stage with a pool of workers: n of them, or with
// [Auto] n to start with and slots for up to its max. Its goroutines are
// started by start.
func newPool(p *Pipeline, k stageKind, name string, n int, cfg stageConfig) *stage {
	if cfg.autoMax == 0 {
		return newStage(p, k, name, n)
	}
	if n < cfg.autoMin || n > cfg.autoMax {
		panic(fmt.Sprintf("sluice: stage %q: with Auto(%d, %d) the n given is the count to start with and must lie within its bounds, got %d",
			name, cfg.autoMin, cfg.autoMax, n))
	}
	s := newStage(p, k, name, 1)
	s.workers = append(s.workers, make([]*worker, cfg.autoMax-1)...)
	s.running.Store(int32(n))
	s.auto = newAutoPool(p, s, cfg.autoMin, cfg.autoMax, n)
	return s
}

// start starts the stage's goroutines: run(i, w) starts slot i's, with
// loop or goStage, once for each of the n of a fixed count; with [Auto],
// for the first n slots now and again whenever the engine adds a worker.
// It must be called once, after everything the goroutines share is built.
func (s *stage) start(p *Pipeline, run func(i int, w *worker)) {
	if s.auto == nil {
		for i, w := range s.workers {
			run(i, w)
		}
		return
	}
	s.auto.begin(run)
}

// slots is how many goroutines the stage may run at once: the length of
// the per-goroutine tallies of its edges.
func (s *stage) slots() int { return len(s.workers) }

func checkWorkers(kind, name string, n int) {
	if n < 1 {
		panic(fmt.Sprintf("sluice: %s %q: workers must be ≥ 1, got %d", kind, name, n))
	}
}

// exited is called by each of the stage's goroutines as it ends; the last
// one closes the stage's output edges and runs its onDone functions.
func (s *stage) exited() {
	if s.running.Add(-1) != 0 {
		return
	}
	for _, e := range s.outs {
		e.close()
	}
	for _, f := range s.onDone {
		f()
	}
}

// onStageDone registers f to run once every goroutine of stage s has
// exited. It must be called before the stage's goroutines start.
func (s *stage) onStageDone(f func()) { s.onDone = append(s.onDone, f) }

// worker holds the timings of one goroutine of a stage. Only that goroutine
// writes them, and only when it starts or stops waiting — never per item.
type worker struct {
	// seq is odd while the goroutine updates blocked and waitSince, so that
	// a snapshot reads the two as one (see times): Busy and Blocked never
	// fall from one snapshot to the next.
	seq       atomic.Uint64
	blocked   atomic.Int64 // total ns spent waiting for input or for room
	waitSince atomic.Int64 // when the current wait began (nowNs); 0 while working
	started   atomic.Int64 // when the goroutine started (nowNs); 0 before
	ended     atomic.Int64 // when it exited; 0 while it runs
	forRoom   atomic.Bool  // the current wait is for room downstream, not for input
	slot      int          // its index in the stage's workers
	past      atomic.Int64 // lifetime of the slot's earlier goroutines (Auto starts a slot again)
	live      atomic.Bool  // a goroutine runs in the slot (set before it starts, cleared after it exited)
	// kick wakes the goroutine from a wait for input when the engine
	// sheds its slot ([Auto]; nil for a fixed count: never ready).
	kick chan struct{}
	// throttling says the current wait is in a [Throttle]'s Wait, whose
	// time goes to throttled instead of blocked.
	throttling atomic.Bool
	throttled  atomic.Int64
	failed     atomic.Int64 // items settled as failed: skipped or dead-lettered
	retries    atomic.Int64 // calls repeated by Retry
	callErrs   atomic.Int64 // calls of the stage's function that returned an error (timeouts included)
	lat        latency      // sampled latency of the chunks it finished
	// alarm, for a stage with [Auto], is signalled at each failed call
	// (nil: none); room, called before each retry, waits while the stage
	// runs more goroutines than the count chosen (see autoPool.room).
	alarm chan struct{}
	room  func(ctx context.Context)
	// When the pipeline traces (see traceSlot), only the goroutine's own:
	// tin is the traces of the input chunk at hand and ti the next one a
	// call on an item takes; trace is the item at hand's, which its
	// senders stamp on what they send for it.
	tin   []context.Context
	ti    int
	trace context.Context
}

// callFailed counts one call of the stage's function that returned an
// error: [Auto] reads it as a dependency's sign of saturation, and a
// probe up is undone at the first.
func (w *worker) callFailed() {
	w.callErrs.Add(1)
	if w.alarm != nil {
		select {
		case w.alarm <- struct{}{}:
		default: // signalled already
		}
	}
}

// lifetime is how long the worker has run, up to now or to its exit.
func (w *worker) lifetime(now int64) int64 {
	start := w.started.Load()
	if start == 0 {
		return 0
	}
	if end := w.ended.Load(); end != 0 {
		now = end
	}
	return now - start
}

var epoch = time.Now()

// nowNs is a monotonic clock in ns, never 0 (0 means "not set" in the
// fields above).
func nowNs() int64 {
	if t := int64(time.Since(epoch)); t != 0 {
		return t
	}
	return 1
}

// waitInput and waitRoom mark the start of a wait for input or for room
// downstream; resume marks its end.
func (w *worker) waitInput() { w.forRoom.Store(false); w.startWait() }
func (w *worker) waitRoom()  { w.forRoom.Store(true); w.startWait() }

// waitThrottle marks the start of a wait in a Throttle's limiter.
func (w *worker) waitThrottle() {
	w.forRoom.Store(false)
	w.throttling.Store(true)
	w.startWait()
}

func (w *worker) startWait() {
	w.seq.Add(1)
	w.waitSince.Store(nowNs())
	w.seq.Add(1)
}

func (w *worker) resume() {
	if w.waitSince.Load() == 0 { // only this goroutine writes it
		return
	}
	w.seq.Add(1)
	d := nowNs() - w.waitSince.Swap(0)
	if w.throttling.Load() {
		w.throttled.Add(d)
		w.throttling.Store(false)
	} else {
		w.blocked.Add(d)
	}
	w.seq.Add(1)
}

// begin marks the goroutine's start; a slot started again keeps the
// lifetime of its earlier goroutines in past, so that Busy never falls.
func (w *worker) begin() {
	w.seq.Add(1)
	if st := w.started.Load(); st != 0 {
		w.past.Add(w.ended.Load() - st)
	}
	w.started.Store(nowNs())
	w.ended.Store(0)
	w.seq.Add(1)
}

// end marks the goroutine's exit, under seq as a wait's end is: a
// snapshot taken just before must not count time past it.
func (w *worker) end() {
	w.seq.Add(1)
	w.ended.Store(nowNs())
	w.seq.Add(1)
}

// times returns the worker's blocked and throttled time and lifetime (its
// slot's, over every goroutine it ran) as of one instant, and whether it
// is waiting then: blocked or throttled includes the wait in progress,
// and everything is read between two equal even values of seq, so that a
// wait or the goroutine ending meanwhile is counted once, in full.
func (w *worker) times() (blocked, throttled, life int64, waiting bool) {
	for {
		s := w.seq.Load()
		if s&1 == 0 {
			blocked = w.blocked.Load()
			throttled = w.throttled.Load()
			throttling := w.throttling.Load()
			since := w.waitSince.Load()
			now := nowNs()
			life = w.past.Load() + w.lifetime(now)
			if w.seq.Load() == s {
				if since != 0 {
					if throttling {
						throttled += max(0, now-since)
					} else {
						blocked += max(0, now-since)
					}
				}
				return blocked, throttled, life, since != 0 && !throttling
			}
		}
		runtime.Gosched() // the goroutine is between two stores
	}
}

// checkFunc panics if a stage's function is nil.
func checkFunc(kind, name string, isNil bool) {
	if isNil {
		panic(fmt.Sprintf("sluice: %s %q: nil function", kind, name))
	}
}
