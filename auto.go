package sluice

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Auto makes the engine choose a stage's worker count, between lo and hi
// goroutines, instead of keeping the n given: n is then the count it starts
// with, and must lie within the bounds (the stage panics otherwise). It
// applies to every stage with a pool of workers: [Map], [Filter],
// [FlatMap], [OrderedMap], [ForEach] and [ForEachChunk]; any other stage
// panics when given it.
//
// Every 100 ms the engine looks at what the stage did since its last look:
// the items its workers took, the time they spent working (calls of the
// function included), waiting for input or room, or waiting on a
// [Throttle]. From those it knows the stage's throughput and its time per
// item, and it
//
//   - adds workers while the stage is the bottleneck (its workers are
//     busy) and the time per item stays at its baseline (the least seen
//     over the last few seconds): doubling at first, then by an eighth;
//   - takes back workers it added when throughput did not rise with them
//     (CPU-bound work past the free cores, a limit elsewhere);
//   - removes workers when the time per item climbs well above its
//     baseline (a dependency saturating: its calls queue), down to the
//     count that the baseline says the dependency serves — at most half
//     of them in one step;
//   - removes workers that wait for input or room downstream, or on the
//     Throttle, most of the time: the stage is not the bottleneck, and
//     fewer workers do the same work.
//
// A stage never runs more than hi goroutines, nor fewer than lo while its
// input lasts. A worker added at run time is owned by the pipeline like
// every other; a worker removed finishes its chunk, hands on what it
// holds and exits, so no item is lost or repeated. With hi > 1 output
// order is not input order, except for OrderedMap, whose default [Window]
// is then four full chunks per worker of hi. [StageStats] show the count,
// its bounds and why it last changed ([AutoStats]).
//
// Auto panics, naming its bounds, unless 1 ≤ lo ≤ hi ≤ 4096.
func Auto(lo, hi int) StageOption {
	if lo < 1 || hi < lo || hi > maxAutoWorkers {
		panic(fmt.Sprintf("sluice: Auto(%d, %d): want 1 ≤ min ≤ max ≤ %d", lo, hi, maxAutoWorkers))
	}
	return stageOptionFunc(func(c *stageConfig) { c.autoMin, c.autoMax = lo, hi })
}

// maxAutoWorkers bounds Auto's max: each possible worker costs a slot in
// the stage's per-worker tallies.
const maxAutoWorkers = 4096

// noAuto panics if a stage without a pool of workers was given Auto.
func noAuto(kind, name string, cfg stageConfig) {
	if cfg.autoMax != 0 {
		panic(fmt.Sprintf("sluice: %s %q: Auto(%d, %d) applies only to stages with a pool of workers", kind, name, cfg.autoMin, cfg.autoMax))
	}
}

// Why a stage's worker count last changed, as [AutoStats].Reason says it.
const (
	AutoStart     = "start"     // the count the stage was built with
	AutoGrow      = "grow"      // the stage was the bottleneck and its time per item at its baseline
	AutoNoGain    = "no-gain"   // throughput did not rise with the workers last added
	AutoLatency   = "latency"   // the time per item climbed above its baseline
	AutoIdle      = "idle"      // workers waited for input or room most of the time
	AutoThrottled = "throttled" // workers waited on the stage's Throttle most of the time
)

// AutoStats describes the worker count the engine chooses for a stage
// with [Auto].
type AutoStats struct {
	Min, Max int // the bounds given to Auto
	// Reason is why the count last changed: one of AutoStart, AutoGrow,
	// AutoNoGain, AutoLatency, AutoIdle and AutoThrottled. Detail says it
	// with the figures that decided it, Changed when, and Changes counts
	// the changes since the start.
	Reason  string
	Detail  string
	Changed time.Time
	Changes int64
}

// autoTick is how often the engine reconsiders an Auto stage's count.
var autoTick = 100 * time.Millisecond

// autoPool is the run-time side of Auto for one stage: the count the
// engine chose, and the goroutine that chooses it.
type autoPool struct {
	p      *Pipeline
	s      *stage
	target atomic.Int32 // workers the engine wants; slots ≥ target exit at their next chunk
	run    func(i int, w *worker)
	done   chan struct{} // closed once every goroutine of the stage has exited

	mu    sync.Mutex // guards stats
	stats AutoStats
}

func newAutoPool(p *Pipeline, s *stage, lo, hi, n int) *autoPool {
	a := &autoPool{p: p, s: s, done: make(chan struct{}),
		stats: AutoStats{Min: lo, Max: hi, Reason: AutoStart, Detail: fmt.Sprintf("started with %d", n), Changed: time.Now()}}
	a.target.Store(int32(n))
	s.onStageDone(func() { close(a.done) })
	return a
}

// shed reports whether worker w must exit: the engine wants fewer
// workers than its slot. One atomic load per chunk.
func (a *autoPool) shed(w *worker) bool { return w.slot >= int(a.target.Load()) }

// begin starts the first target workers and the control goroutine, which
// the scope owns like any stage goroutine: it exits once the stage has.
func (a *autoPool) begin(run func(i int, w *worker)) {
	a.run = run
	for i := range int(a.target.Load()) {
		run(i, a.slot(i))
	}
	p := a.p
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		a.control()
	}()
}

// slot returns worker slot i, making it on first use. Only the goroutine
// that starts workers calls it; Stats reads the slots under p.mu.
func (a *autoPool) slot(i int) *worker {
	if w := a.s.workers[i]; w != nil {
		return w
	}
	w := &worker{slot: i}
	a.p.mu.Lock()
	a.s.workers[i] = w
	a.p.mu.Unlock()
	return w
}

// add starts a worker in slot i unless one still runs there (a worker
// shed earlier that has not reached its chunk's end) or the stage has
// finished: a stage whose last goroutine exited has closed its outputs,
// so running is raised only while it is above zero.
func (a *autoPool) add(i int) {
	w := a.slot(i)
	if w.live.Load() {
		return // exiting: started again at a later tick
	}
	for {
		r := a.s.running.Load()
		if r == 0 || a.p.stopping() {
			return
		}
		if a.s.running.CompareAndSwap(r, r+1) {
			break
		}
	}
	a.run(i, w)
}

// control runs the controller every autoTick until the stage has ended
// or the pipeline stopped, and makes the stage's goroutines follow its
// choice.
func (a *autoPool) control() {
	t := time.NewTicker(autoTick)
	defer t.Stop()
	st := a.snapshot()
	step := autoChooser(a.stats.Min, a.stats.Max, int(a.target.Load()))
	var acc sample
	for {
		select {
		case <-a.done:
			return
		case <-a.p.ctx.Done():
			return
		case <-t.C:
		}
		now := a.snapshot()
		acc.add(now.since(st), int(a.target.Load()))
		st = now
		if !acc.enough() {
			continue
		}
		n, reason, detail := step(acc)
		n = min(max(n, a.stats.Min), a.stats.Max)
		acc = sample{}
		if n != int(a.target.Load()) {
			a.target.Store(int32(n))
			a.mu.Lock()
			a.stats.Reason, a.stats.Detail, a.stats.Changed = reason, detail, time.Now()
			a.stats.Changes++
			a.mu.Unlock()
		}
		for i := range n {
			a.add(i) // a slot below the target whose worker is not running
		}
	}
}

// autoChooser makes what control asks for a count: a controller's step
// (tests replace it).
var autoChooser = func(lo, hi, n int) func(sample) (int, string, string) {
	return newController(lo, hi, n).step
}

// tally is what the stage's workers had done by one instant.
type tally struct {
	at                    int64
	items                 int64 // taken from the inputs
	busy, idle, throttled int64 // ns, summed over the slots
}

func (a *autoPool) snapshot() tally {
	t := tally{at: nowNs()}
	for _, w := range a.s.workers {
		if w == nil {
			continue
		}
		b, th, life, _ := w.times()
		t.idle += b
		t.throttled += th
		t.busy += max(0, life-b-th)
	}
	for _, e := range a.s.ins {
		t.items += e.stats().Received
	}
	return t
}

func (t tally) since(o tally) sample {
	return sample{dt: t.at - o.at, items: t.items - o.items, busy: t.busy - o.busy, idle: t.idle - o.idle, throttled: t.throttled - o.throttled}
}

// sample is what the stage did over an interval with n workers.
type sample struct {
	dt                    int64 // ns
	items                 int64
	busy, idle, throttled int64 // ns, summed over workers
	n                     int
}

func (s *sample) add(o sample, n int) {
	s.dt += o.dt
	s.items += o.items
	s.busy += o.busy
	s.idle += o.idle
	s.throttled += o.throttled
	s.n = n
}

// enough says whether a sample can decide: enough items for a time per
// item, workers mostly not working (nothing to measure, something to
// decide), or a long enough wait.
func (s sample) enough() bool {
	life := s.busy + s.idle + s.throttled
	return s.items >= int64(max(8, s.n)) || (life > 0 && float64(s.busy) < 0.6*float64(life)) || s.dt >= int64(2*time.Second)
}

// controller chooses a worker count from samples; it is a pure function
// of what it was shown, so that its decisions can be tested on their own.
//
// Every change is a probe that the next sample judges by throughput: a
// grow is kept if throughput rose by at least minGain of the share of
// workers added (else the workers go back: no-gain), a shrink if it fell
// by at most maxLoss of the share removed (else they come back, and the
// time per item is taken as the new baseline). So the
// count settles where one more worker adds little: at the cores for
// CPU-bound work, at a dependency's capacity when its calls queue, and
// where the machine itself saturates for calls that wait. A time per item
// far above its baseline (a dependency saturating) proposes a shrink to
// the count the baseline says it serves.
type controller struct {
	lo, hi  int
	n       int
	slow    bool      // slow start: double while each doubling pays
	hold    int       // samples to wait before the next grow probe
	backoff int       // hold after the next failed grow probe
	recent  []float64 // time per item of the last samples (ns), for the baseline
	next    int       // where the next goes in recent
	probe   probe
}

// probe is a change waiting to be judged.
type probe struct {
	from   int     // the count before; 0: none pending
	x, t   float64 // throughput and time per item before
	age    int     // samples since
	reason string
}

const (
	minGain = 0.15 // a grow probe is kept if throughput rose by this share of the workers added
	maxLoss = 0.15 // a shrink probe is kept if throughput fell by at most this share of the workers removed
)

// baselineSamples is how many samples the baseline (the least time per
// item) looks back over: about three seconds. A dependency whose calls
// became slower for good is slower at every count; the baseline follows
// it after that long.
const baselineSamples = 30

func newController(lo, hi, n int) *controller {
	return &controller{lo: lo, hi: hi, n: n, slow: true, backoff: 10, recent: make([]float64, 0, baselineSamples)}
}

// step takes one sample and returns the count to run, and why it changed
// when it did.
func (c *controller) step(s sample) (n int, reason, detail string) {
	life := float64(s.busy + s.idle + s.throttled)
	if life <= 0 || s.dt <= 0 {
		return c.n, "", ""
	}
	util := float64(s.busy) / life
	// Not the bottleneck: the workers wait most of the time. Keep those
	// that the work needs (the busy share), with a margin.
	if util < 0.6 {
		c.probe = probe{}
		if c.n == c.lo {
			return c.n, "", ""
		}
		want := max(c.lo, int(math.Ceil(float64(c.n)*util/0.75)))
		if want >= c.n {
			return c.n, "", ""
		}
		reason, why := AutoIdle, "input or room"
		if s.throttled > s.idle {
			reason, why = AutoThrottled, "the Throttle"
		}
		c.slow, c.hold = false, 3
		return c.set(want, reason, fmt.Sprintf("workers busy %.0f%% of the time, waiting on %s", 100*util, why))
	}
	if s.items <= 0 {
		return c.n, "", ""
	}
	t := float64(s.busy) / float64(s.items)
	x := float64(s.items) / float64(s.dt)
	if len(c.recent) < cap(c.recent) {
		c.recent = append(c.recent, t)
	} else {
		c.recent[c.next] = t
		c.next = (c.next + 1) % len(c.recent)
	}
	base := t
	for _, r := range c.recent {
		base = min(base, r)
	}
	g := base / t
	if pr := c.probe; pr.from != 0 {
		c.probe = probe{}
		share := float64(c.n-pr.from) / float64(pr.from) // > 0 for a grow
		change := x/pr.x - 1
		switch {
		case share > 0 && change < minGain*share:
			c.slow, c.hold = false, c.backoff
			c.backoff = min(2*c.backoff, 50)
			return c.set(pr.from, AutoNoGain, fmt.Sprintf("%d workers did %.0f items/s, %d did %.0f", c.n, x*1e9, pr.from, pr.x*1e9))
		case share < 0 && -change > maxLoss*-share:
			// The workers removed were doing work: they come back, and
			// the time per item before is the baseline from now on (the
			// calls were slower for another reason than queueing, such
			// as the machine's own load).
			c.rebase(pr.t)
			return c.set(pr.from, AutoGrow, fmt.Sprintf("%d workers did %.0f items/s, %d did %.0f", c.n, x*1e9, pr.from, pr.x*1e9))
		case share > 0:
			c.backoff = 10
		case share < 0:
			c.slow = false // a shrink that cost nothing: the count is near its best
		}
	}
	// A dependency saturating: calls queue, the time per item climbs.
	// The count it serves without queueing is about n·g.
	if g < 0.6 && c.n > c.lo {
		want := max(c.lo, min(c.n-1, int(float64(c.n)*max(g, 0.5)+0.5)))
		c.probe = probe{from: c.n, x: x, t: t}
		return c.set(want, AutoLatency, fmt.Sprintf("time per item %v, %.1f× its baseline %v", dur(t), t/base, dur(base)))
	}
	if c.hold > 0 {
		c.hold--
		return c.n, "", ""
	}
	if util >= 0.8 && g >= 0.75 && c.n < c.hi {
		want := max(c.n+1, c.n*5/4)
		if c.slow {
			want = 2 * c.n
		}
		c.probe = probe{from: c.n, x: x, t: t}
		return c.set(min(c.hi, want), AutoGrow, fmt.Sprintf("workers busy %.0f%% of the time, time per item %v (baseline %v), %.0f items/s", 100*util, dur(t), dur(base), x*1e9))
	}
	return c.n, "", ""
}

// rebase makes t the least time per item of the window.
func (c *controller) rebase(t float64) {
	for i := range c.recent {
		c.recent[i] = max(c.recent[i], t)
	}
}

func (c *controller) set(n int, reason, detail string) (int, string, string) {
	if n == c.n {
		c.probe = probe{}
		return n, "", ""
	}
	c.n = n
	return n, reason, detail
}

func dur(ns float64) time.Duration { return time.Duration(ns).Round(time.Microsecond / 10) }
