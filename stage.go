package sluice

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
)

// stage is what a pipeline knows of one of its stages: its goroutines'
// timings and the edges it reads and writes.
type stage struct {
	name    string
	kind    string
	workers []*worker
	ins     []edgeInfo // edges it consumes
	outs    []edgeInfo // edges it produces, closed when the last worker exits
	running atomic.Int32
	onDone  []func() // run after outs are closed
}

// newStage registers a stage with n worker goroutines. It panics if p
// was not made by New, the name is empty or n < 1.
func newStage(p *Pipeline, kind, name string, n int) *stage {
	p.mustBeMade(fmt.Sprintf("%s %q", kind, name))
	if name == "" {
		panic("sluice: " + kind + ": stage name must not be empty")
	}
	checkWorkers(kind, name, n)
	s := &stage{name: name, kind: kind, workers: make([]*worker, n)}
	s.running.Store(int32(n))
	for i := range s.workers {
		s.workers[i] = &worker{}
	}
	p.addStage(s)
	return s
}

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
	failed    atomic.Int64 // items settled as failed: skipped or dead-lettered
	retries   atomic.Int64 // calls repeated by Retry
	lat       latency      // sampled latency of the chunks it finished
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
	w.blocked.Add(nowNs() - w.waitSince.Swap(0))
	w.seq.Add(1)
}

// end marks the goroutine's exit, under seq as a wait's end is: a
// snapshot taken just before must not count time past it.
func (w *worker) end() {
	w.seq.Add(1)
	w.ended.Store(nowNs())
	w.seq.Add(1)
}

// times returns the worker's blocked time and lifetime as of one instant,
// and whether it is waiting then: blocked includes the wait in progress,
// and everything is read between two equal even values of seq, so that a
// wait or the goroutine ending meanwhile is counted once, in full.
func (w *worker) times() (blocked, life int64, waiting bool) {
	for {
		s := w.seq.Load()
		if s&1 == 0 {
			blocked = w.blocked.Load()
			since := w.waitSince.Load()
			now := nowNs()
			life = w.lifetime(now)
			if w.seq.Load() == s {
				if since != 0 {
					blocked += max(0, now-since)
				}
				return blocked, life, since != 0
			}
		}
		runtime.Gosched() // the goroutine is between two stores
	}
}
