package auto

import (
	"fmt"
	"math"
)

// shrunk carries out the verdict on a probe down.
func (c *Controller) shrunk(v verdict) Decision {
	switch v.kind {
	case idle, throttle:
		return c.idled(v)
	case check, descent, stepDown:
		return c.checked(v)
	case failing:
		return c.failed(v)
	}
	return c.unqueued(v)
}

// idled carries out an idle shrink's verdict. One taken back because
// the workers waited on the Throttle comes back only to the count its
// throughput before needs: more would only wait on the Throttle.
func (c *Controller) idled(v verdict) Decision {
	if v.kept {
		c.tref, c.idle = 0, 0
		return c.same()
	}
	c.idleHold, c.idle = c.backoff, 0
	want := v.from
	if v.kind == throttle {
		want = max(c.n+1, min(v.from, int(math.Ceil(float64(c.n)*v.b.x/v.a.x-1e-6))))
	}
	c.back(want, v.from, v.before, v.b.t)
	return c.set(want, Grow, v.figures)
}

// checked carries out a check's verdict. Kept while descending, the next
// check halves the count again. Taken back, the knee lies between the
// two counts: the next check is halfway (on a log scale) while a count
// lies between them, so that the count ends at the knee instead of at
// the top of the doubling that crossed it, or a worker above it (a
// worker past a dependency's capacity makes every call wait). After a
// descent, the bisection goes on after each check kept, halfway between
// it and the count that did less; once no count lies between, that count
// is checked again, a step down: kept, it did less by noise, and the
// descent resumes from it.
func (c *Controller) checked(v verdict) Decision {
	if v.kept {
		if c.confirm {
			c.descend = true // the count that did less did so by noise
		}
		switch {
		case c.descend && c.n > c.lo:
			c.checks = append(c.checks, checkAt{n: max(c.lo, c.n/2)})
		case c.short > 0 && !c.bisect(c.short, c.n):
			c.checks = append(c.checks, checkAt{n: c.short})
			c.confirm, c.short = true, 0
			c.checkDue = true
			return c.same()
		}
		c.confirm = false
		c.checkDue = true // the next one down
		return c.same()
	}
	c.short = 0
	if c.descend || c.confirm {
		c.short = c.n // a descent's bisection: it goes on after checks kept
	}
	c.descend, c.confirm = false, false
	c.checks = c.checks[:0]
	c.bisect(c.n, v.from)
	// The next check is judged against ticks taken after coming back,
	// not against this one's: ticks that the noise lifted would make
	// every check of the bisection look like a loss.
	c.back(v.from, v.from, nil, v.b.t)
	return c.set(v.from, Grow, v.figures)
}

// bisect queues a check halfway (on a log scale) between counts lo and
// hi, if a count lies between them, and reports whether one did.
func (c *Controller) bisect(lo, hi int) bool {
	mid := int(math.Sqrt(float64(lo)*float64(hi)) + 0.5)
	if mid <= lo || mid >= hi {
		return false
	}
	c.checks, c.checkDue = append(c.checks, checkAt{n: mid}), true
	return true
}

// unqueued carries out the verdict on a latency shrink or a halving.
// Kept, the workers removed were queueing: the count goes on halving
// while the calls still wait (their time above the floor), down to the
// count Little's law says the throughput needs at the floor: fewer could
// not do it. Taken back, a halving went below what the dependency
// serves, which is as many as the throughput before needs; a latency
// shrink saw calls slower for another reason than queueing (the
// machine's own load, a slower dependency): the workers come back, and
// the time per item before is the count's from now on.
func (c *Controller) unqueued(v verdict) Decision {
	if v.kept {
		want := max(c.lo, c.n/2, c.need(v.a.x))
		if c.floor > 0 && v.a.t <= c.t.QueueRatio*c.floor {
			want = c.n
		}
		if want < c.n {
			return c.start(want, halve, c.last(c.t.BeforeTicks), Latency, fmt.Sprintf("%s: trying %d", v.figures, want))
		}
		return c.same()
	}
	c.hold = c.t.HoldFirst
	want := v.from
	if v.kind == halve {
		want = max(c.n+1, min(v.from, int(float64(c.n)*v.b.x/v.a.x+0.5)))
	}
	c.back(want, v.from, v.before, v.b.t)
	return c.set(want, Grow, v.figures)
}

// failed carries out a failing shrink's verdict. Kept while calls still
// fail, the count shrinks again. Taken back with the errors as they were,
// the errors are not the count's doing: the count comes back and they
// become the level that fails. Taken back with the errors gone, the
// shrink went below what the dependency serves: the count comes back to
// what the throughput before needs, below the count that failed (where
// none lies between, it stays).
func (c *Controller) failed(v verdict) Decision {
	if v.kept {
		if last := v.after[len(v.after)-1]; len(v.after) >= 2 && c.failingAt(last.f, last.errs) && c.n > c.lo {
			return c.failShrink(last, c.last(c.t.BeforeTicks))
		}
		return c.same()
	}
	c.hold = c.t.HoldFirst
	want := v.from
	if v.a.f*c.t.FailFactor >= v.b.f {
		c.fref = max(v.a.f, v.b.f)
	} else {
		want = min(v.from-1, int(float64(c.n)*v.b.x/v.a.x+0.5))
		if want <= c.n {
			// No count lies between this one and the one that failed:
			// the workers it lacks are those whose calls failed.
			c.cur, c.high = append(c.cur[:0], v.after...), 0
			return c.same()
		}
	}
	c.back(want, v.from, v.before, v.b.t)
	return c.set(want, Grow, v.figures)
}

// failShrink sheds workers because their calls fail (f per item),
// judged against before: to the count whose calls would all have
// succeeded had each failed call taken a worker's place, n/(1+f) rounded
// up, at least one fewer and no fewer than half.
func (c *Controller) failShrink(tk tick, before []tick) Decision {
	c.failedAt(c.n)
	c.slow, c.checkDue, c.checks, c.descend, c.confirm, c.short, c.fails = false, false, c.checks[:0], false, false, 0, 0
	want := max(c.lo, (c.n+1)/2, min(c.n-1, int(math.Ceil(float64(c.n)/(1+tk.f)-1e-9))))
	return c.start(want, failing, before, Failing,
		fmt.Sprintf("%.2f failed calls per item at %d workers", tk.f, c.n))
}

// risen returns how many of a shrink probe's last ticks took more time
// per item than tb, its ticks' before, by the latency factor: 0 for a
// probe up.
func (c *Controller) risen(tb float64) int {
	if c.n >= c.pr.from {
		return 0
	}
	h := 0
	for i := len(c.pr.after) - 1; i >= 0 && c.t.LatencyFactor*c.pr.after[i].t > tb; i-- {
		h++
	}
	return h
}

// latency starts a shrink after the time per item rose to t at the same
// count (throughput x), judged against before: to the count that brings
// the time per item back to what it was, and no fewer than Little's law
// needs for x at the floor (while the floor is not known, no fewer than
// half).
func (c *Controller) latency(x, t float64, before []tick) Decision {
	c.slow, c.checkDue, c.checks, c.descend, c.confirm, c.short = false, false, c.checks[:0], false, false, 0
	if c.n <= c.lo {
		return c.same()
	}
	want := int(float64(c.n)*c.tref/t + 0.5)
	if c.floor > 0 {
		want = max(want, c.need(x))
	} else {
		want = max(want, (c.n+1)/2)
	}
	want = min(c.n-1, want)
	return c.start(want, latency, before, Latency,
		fmt.Sprintf("time per item %v, %.1f× the %v it was at %d workers", dur(t), t/c.tref, dur(c.tref), c.n))
}

// need is the count that Little's law says throughput x (items/ns) needs
// if no call waits (each takes the floor); 0 while the floor is not known.
// (The floor is the least seen, so the count may fall one short; a count
// exactly met is not rounded up.)
func (c *Controller) need(x float64) int {
	return int(math.Ceil(x*c.floor - 1e-6))
}
