package sluice

// How the pool carries out a change of its count: new workers started a
// few at a time, the workers shed by an undone probe let finish before
// retries go on.

import (
	"context"
	"math"
	"time"
)

// room waits, before a retry, while the stage runs more goroutines than
// the count a probe up went back to, for a Tick at most: after a probe past what a
// dependency serves is undone, the workers shed still finish the calls
// they hold, and a retry made meanwhile would find the dependency full
// and spend one of its item's attempts. It returns at once otherwise, or
// when ctx ends or the pipeline drains.
func (a *autoPool) room(ctx context.Context) {
	if a.s.running.Load() <= a.undone.Load() {
		return
	}
	t := time.NewTimer(a.tune.Tick)
	defer t.Stop()
	for a.s.running.Load() > a.undone.Load() {
		tick := time.NewTimer(a.tune.Recheck)
		select {
		case <-tick.C:
		case <-t.C:
			return
		case <-ctx.Done():
			tick.Stop()
			return
		case <-a.p.intake:
			tick.Stop()
			return
		}
	}
}

// setTarget makes n the count the stage runs now, waking the workers
// shed that wait for input.
func (a *autoPool) setTarget(n int) {
	if old := int(a.target.Swap(int32(n))); n < old {
		a.kick(n, old)
	}
}

// lingering counts the goroutines in slots from n on that still run.
func (a *autoPool) lingering(n int) int {
	k := 0
	for _, w := range a.s.workers[n:] {
		if w != nil && w.live.Load() {
			k++
		}
	}
	return k
}

// catchUp raises the count the stage runs towards the count chosen, by
// ramp workers at most, and reports whether it falls short still. A slot is
// started again only while the goroutines that run, shed or not, number
// fewer than the count chosen: a worker shed whose item is retried keeps
// its place until the item is done.
func (a *autoPool) catchUp() bool {
	cur := int(a.target.Load())
	if cur >= a.want {
		a.undone.Store(math.MaxInt32)
		return false
	}
	run := min(max(cur, a.stats.Min, a.want-a.lingering(cur)), cur+a.ramp)
	if run > cur {
		a.setTarget(run)
		for i := range run {
			a.add(i)
		}
	}
	if run >= a.want {
		a.undone.Store(math.MaxInt32)
	}
	return run < a.want
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
