package sluice

import (
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/auto"
)

// autoPool is the run-time side of Auto for one stage: the count the
// engine chose, the goroutine that chooses it with a controller of
// package internal/auto, and the workers it adds and sheds.
type autoPool struct {
	p      *Pipeline
	s      *stage
	tune   auto.Tuning
	target atomic.Int32 // workers the stage runs now; slots ≥ target exit at their next chunk
	want   int          // the count the controller chose (the control goroutine's only)
	ramp   int          // workers catchUp may start at a time (the control goroutine's only)
	// undone is the count a probe up went back to while the workers it
	// added still run (math.MaxInt32 otherwise): see room.
	undone atomic.Int32
	run    func(i int, w *worker)
	done   chan struct{} // closed once every goroutine of the stage has exited
	// alarm is signalled by a worker whose call failed (see
	// worker.callFailed): a probe up is undone at once.
	alarm chan struct{}

	mu    sync.Mutex // guards stats
	stats AutoStats
}

func newAutoPool(p *Pipeline, s *stage, lo, hi, n int) *autoPool {
	a := &autoPool{p: p, s: s, tune: auto.Default(), want: n, done: make(chan struct{}), alarm: make(chan struct{}, 1),
		stats: AutoStats{Min: lo, Max: hi, Reason: AutoStart, Detail: fmt.Sprintf("started with %d", n), Changed: time.Now()}}
	a.target.Store(int32(n))
	a.undone.Store(math.MaxInt32)
	s.onStageDone(func() { close(a.done) })
	return a
}

// chooser is what control asks for a count: an auto.Controller.
type chooser interface {
	Step(auto.Sample) auto.Decision
	Watching() bool
	Refused(auto.Sample) auto.Decision
}

// autoChooser makes the stage's chooser (tests replace it).
var autoChooser = func(lo, hi, n int, t auto.Tuning) chooser { return auto.New(lo, hi, n, t) }

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
	w := &worker{slot: i, kick: make(chan struct{}, 1), alarm: a.alarm, room: a.room}
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

// control steps the controller every Tick until the stage has ended or
// the pipeline stopped, and makes the stage's goroutines follow its
// choice. At the start and after a change it lets Settle pass before it
// measures:
// workers just added have taken their first items by then and workers
// removed have finished theirs, so the next sample sees the new count
// only, with as many items in hand at its end as at its start. While a
// probe up is under way, a failed call wakes it at once, and the
// controller sees what the stage did since the change (Refused). While
// the stage runs fewer workers than the count chosen (new workers being
// started, or workers shed for failing calls still finishing their
// items), it catches up every Recheck (see apply).
func (a *autoPool) control() {
	t := time.NewTimer(a.tune.Settle) // the first workers take their first items, as after a change
	defer t.Stop()
	st := a.snapshot()
	ch := autoChooser(a.stats.Min, a.stats.Max, int(a.target.Load()), a.tune)
	re := time.NewTimer(a.tune.Recheck) // runs while the stage catches up with the count chosen
	defer re.Stop()
	re.Stop()
	var acc auto.Sample
	mark := st // the tally when the count last changed
	settling := true
	changed := func(d auto.Decision, undo bool) {
		if a.apply(d, undo) {
			mark, acc, settling = a.snapshot(), auto.Sample{}, true
			t.Reset(a.tune.Settle)
		}
		if int(a.target.Load()) < a.want {
			re.Reset(a.tune.Recheck)
		}
	}
	for {
		select {
		case <-a.done:
			return
		case <-a.p.ctx.Done():
			return
		case <-a.alarm:
			if ch.Watching() {
				if d := ch.Refused(a.snapshot().since(mark)); d.Reason != auto.None {
					changed(d, true)
				}
			}
			continue
		case <-re.C:
			if a.catchUp() {
				re.Reset(a.tune.Recheck)
			}
			continue
		case <-t.C:
		}
		now := a.snapshot()
		t.Reset(a.tune.Tick)
		if settling {
			st, settling = now, false
			continue
		}
		acc.Add(now.since(st), int(a.target.Load()))
		st = now
		if !acc.Enough(a.tune) {
			continue
		}
		d := ch.Step(acc)
		acc = auto.Sample{}
		changed(d, false)
	}
}

// apply makes the stage run d.Count workers (within the bounds), and
// reports whether the count changed: a slot below the target whose worker
// is not running is started again whether or not it did. A count raised
// starts its new workers over Settle, a few every Recheck (see catchUp):
// a probe past what a dependency serves is undone at the first refused
// call, before most of them have made one. A probe up undone (undo)
// counts the workers shed that still finish their items: until they have
// exited, the stage runs that many fewer, and a retry waits while the
// stage runs more than the count (see room). An item a shed worker
// retries would otherwise find the dependency as full as before, every
// slot of it taken by the workers kept, and spend its attempts.
func (a *autoPool) apply(d auto.Decision, undo bool) bool {
	n := min(max(d.Count, a.stats.Min), a.stats.Max)
	old := a.want
	if n != old {
		a.want = n
		run, cur := n, int(a.target.Load())
		a.undone.Store(math.MaxInt32)
		a.ramp = n
		switch {
		case n < old && undo:
			run = max(a.stats.Min, n-a.lingering(n))
			a.undone.Store(int32(n))
		case n > old:
			a.ramp = max(1, int(math.Ceil(float64(n-old)*float64(a.tune.Recheck)/float64(a.tune.Settle))))
			run = min(n, cur+a.ramp)
		}
		a.setTarget(run)
		a.mu.Lock()
		a.stats.Reason, a.stats.Detail, a.stats.Changed = AutoReason(d.Reason), d.Why, time.Now()
		a.stats.Changes++
		a.mu.Unlock()
		a.logChange(old, n, AutoReason(d.Reason), d.Why)
	}
	for i := range int(a.target.Load()) {
		a.add(i)
	}
	return n != old
}

// tally is what the stage's workers had done by one instant.
type tally struct {
	at                    int64
	items, errs           int64 // items taken from the inputs; calls that failed
	busy, idle, throttled int64 // ns, summed over the slots
}

// snapshot tallies the stage's workers, those shed that still finish
// their chunk included: their failed calls are the count's too, since
// they were made against what the dependency serves.
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
		t.errs += w.callErrs.Load()
	}
	for _, e := range a.s.ins {
		t.items += e.stats().Received
	}
	return t
}

func (t tally) since(o tally) auto.Sample {
	return auto.Sample{Elapsed: time.Duration(t.at - o.at), Items: t.items - o.items, Errors: t.errs - o.errs,
		Busy: time.Duration(t.busy - o.busy), Idle: time.Duration(t.idle - o.idle), Throttled: time.Duration(t.throttled - o.throttled)}
}

// logChange logs a change of the worker count: at Info, or at Debug for a
// probe (a step tried and taken back within a second or two, which a
// steady stage makes now and then).
func (a *autoPool) logChange(from, to int, why AutoReason, detail string) {
	level := slog.LevelInfo
	if why == AutoProbe {
		level = slog.LevelDebug
	}
	a.p.logAt(level, "workers changed", slog.String("stage", a.s.name), slog.Int("from", from), slog.Int("to", to),
		slog.String("reason", why.String()), slog.String("why", detail))
}
