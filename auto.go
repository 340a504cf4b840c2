package sluice

import (
	"fmt"
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
// item. Each change of the count is a probe, judged by how throughput
// answered it, over as many looks as the noise of the machine needs to
// tell; the count
//
//   - doubles from the start while each doubling raises throughput by a
//     fair share of the workers added, then goes back to what the
//     throughput reached needs when one does not (CPU-bound work past the
//     free cores, a dependency that serves no more at once), and checks
//     with shrinks whether the last doublings' workers are needed,
//     halving the distance between the two counts after each shrink that
//     cost throughput; a shrink that the noise leaves unclear is kept
//     unless the workers removed paid more than a little;
//   - keeps growing, however slowly throughput rises, while it rises
//     clearly (calls that wait on a dependency but cost the machine CPU);
//     when the noise leaves a doubling unclear, it keeps the workers;
//   - at a steady count, tries a step up now and then, kept only if it
//     clearly adds at least half a worker's worth (a worker more costs
//     every call time where a dependency queues them), taken back as soon
//     as it clearly does not, less often each time, and not at all where
//     the machine's noise could not tell;
//   - shrinks when the time per item climbs far above what it was at the
//     same count (a dependency now serving fewer at once) to the count
//     that brings it back, then halves while calls still take longer than
//     the least time per call seen, never below the count that the
//     throughput needs at that least time (Little's law); a rise during a
//     shrink probe starts the shrink at once;
//   - removes workers that wait for input or room downstream, or on the
//     Throttle, most of the time: the stage is not the bottleneck, and
//     fewer workers do the same work.
//
// A stage never runs more than hi goroutines, nor fewer than lo while its
// input lasts. A worker added at run time is owned by the pipeline like
// every other; a worker removed finishes its chunk, hands on what it
// holds and exits, so no item is lost or repeated; a worker removed while
// it waits for input exits at once. With hi > 1 output
// order is not input order, except for OrderedMap, whose default [Window]
// is then four full chunks per worker of hi. [StageStats] show the count,
// its bounds and why it last changed ([AutoStats]).
//
// Auto panics, naming its bounds, unless 1 ≤ lo ≤ hi ≤ 4096.
func Auto(lo, hi int) StageOption {
	if lo < 1 || hi < lo || hi > maxAutoWorkers {
		panic(fmt.Sprintf("sluice: Auto(%d, %d): want 1 ≤ min ≤ max ≤ %d", lo, hi, maxAutoWorkers))
	}
	return option(fitsPool, fmt.Sprintf("Auto(%d, %d)", lo, hi), func(c *stageConfig) { c.autoMin, c.autoMax = lo, hi })
}

// maxAutoWorkers bounds Auto's max: each possible worker costs a slot in
// the stage's per-worker tallies.
const maxAutoWorkers = 4096

// Why a stage's worker count last changed, as [AutoStats].Reason says it.
const (
	AutoStart     = "start"     // the count the stage was built with
	AutoGrow      = "grow"      // the stage was the bottleneck and more workers raised its throughput, or are tried
	AutoNoGain    = "no-gain"   // throughput did not rise with the workers last added
	AutoLatency   = "latency"   // the time per item climbed above what it was at the same count
	AutoIdle      = "idle"      // workers waited for input or room most of the time
	AutoThrottled = "throttled" // workers waited on the stage's Throttle most of the time
	AutoProbe     = "probe"     // a step to a count nearby, to see whether it does better
)

// AutoStats describes the worker count the engine chooses for a stage
// with [Auto].
type AutoStats struct {
	Min, Max int // the bounds given to Auto
	// Reason is why the count last changed: one of AutoStart, AutoGrow,
	// AutoNoGain, AutoLatency, AutoProbe, AutoIdle and AutoThrottled. Detail says it
	// with the figures that decided it, Changed when, and Changes counts
	// the changes since the start.
	Reason  string
	Detail  string
	Changed time.Time
	Changes int64
}

// autoTick is how often the engine reconsiders an Auto stage's count,
// and autoSettle how long it waits after a change before it measures the
// new count.
var (
	autoTick   = 100 * time.Millisecond
	autoSettle = 25 * time.Millisecond
)

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
	w := &worker{slot: i, kick: make(chan struct{}, 1)}
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
	select {
	case <-w.kick: // left by a goroutine that was shed at a chunk's end
	default:
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
// choice. After a change it lets autoSettle pass before it measures
// again: workers just added have taken their first items by then and
// workers removed have finished theirs, so the next sample sees the new
// count only, with as many items in hand at its end as at its start.
func (a *autoPool) control() {
	t := time.NewTimer(autoTick)
	defer t.Stop()
	st := a.snapshot()
	step := autoChooser(a.stats.Min, a.stats.Max, int(a.target.Load()))
	var acc sample
	settling := false
	for {
		select {
		case <-a.done:
			return
		case <-a.p.ctx.Done():
			return
		case <-t.C:
		}
		now := a.snapshot()
		t.Reset(autoTick)
		if settling {
			st, settling = now, false
			continue
		}
		acc.add(now.since(st), int(a.target.Load()))
		st = now
		if !acc.enough() {
			continue
		}
		n, reason, detail := step(acc)
		n = min(max(n, a.stats.Min), a.stats.Max)
		acc = sample{}
		if old := int(a.target.Load()); n != old {
			a.target.Store(int32(n))
			a.kick(n, old)
			a.mu.Lock()
			a.stats.Reason, a.stats.Detail, a.stats.Changed = reason, detail, time.Now()
			a.stats.Changes++
			a.mu.Unlock()
			settling = true
			t.Reset(autoSettle)
		}
		for i := range n {
			a.add(i) // a slot below the target whose worker is not running
		}
	}
}

// kick wakes the workers of slots [from, to) that wait for input, once
// the target has fallen to from: each then sees that it was shed and
// exits without waiting for a chunk. A worker that is working finds its
// kick when it next waits, after the shed check at its chunk's end.
func (a *autoPool) kick(from, to int) {
	for i := from; i < to; i++ {
		if w := a.s.workers[i]; w != nil {
			select {
			case w.kick <- struct{}{}:
			default: // kicked already
			}
		}
	}
}

// autoChooser makes what control asks for a count: a controller's step
// (tests replace it).
var autoChooser = func(lo, hi, n int) func(sample) (int, string, string) {
	return newController(lo, hi, n).step
}
