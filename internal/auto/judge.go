package auto

import (
	"fmt"
	"math"
)

// verdict is a probe judged: the means of its ticks before (b) and after
// (a), its elasticity with its standard error, whether it is kept and
// whether clearly for more workers, and whether its calls failed more.
type verdict struct {
	probe
	kept, more, failed bool
	e, se              float64
	a, b               tick
	figures            string
}

// judge adds a tick to the pending probe and decides it once the ticks
// say clearly which side of its rule's threshold its elasticity lies on.
func (c *Controller) judge(tk tick) Decision {
	pr := &c.pr
	ru := c.rules[pr.kind]
	if pr.settled < ru.settle {
		pr.settled++
		return c.same()
	}
	if k := len(pr.after); k > 0 {
		c.vary(pr.after[k-1], tk)
	}
	pr.after = append(pr.after, tk)
	a, b := mean(pr.after), mean(pr.before)
	if h := c.risen(b.t); h > 0 {
		return c.voided(h, b.t)
	}
	l := math.Log(float64(c.n) / float64(pr.from))
	e := math.Log(a.x/b.x) / l
	sx := math.Sqrt(c.sigma2() * (1/float64(len(pr.before)) + 1/float64(len(pr.after)))) // of ln(a.x/b.x)
	se := sx / math.Abs(l)
	k := len(pr.after)
	// One tick decides only an overwhelming case; fewer workers need two.
	more := e-ru.threshold >= ru.zMore*se && (k >= 2 || e-ru.threshold >= max(ru.zMore, c.t.OneTick)*se)
	fewer := ru.threshold-e >= ru.zFewer*se && k >= 2
	if ru.maxLoss > 0 && k >= 2 && math.Log(b.x/a.x)-c.t.JudgeMore*sx > -math.Log(1-ru.maxLoss) {
		// A shrink that clearly lost more than a little went below what
		// the dependency serves, however diluted its elasticity over a
		// wide step.
		more = true
	}
	failed := ru.up && c.failedMore(pr.after, a, b)
	if pr.kind == failing && !more && k >= 2 && c.failingAt(tk.f, tk.errs) {
		// Still failing a tick after the first (whose errors may be
		// those of workers shed finishing their chunks): still more than
		// the dependency serves.
		fewer = true
	}
	if ru.bound && 1-a.th < c.t.IdleBelow {
		more, fewer = false, true // the Throttle sets the throughput: fewer workers do what it lets through
	}
	if !more && !fewer && !failed && k < ru.maxTicks {
		return c.same()
	}
	if !more && !fewer {
		// Unclear: the point estimate, as the rule says; but a doubling
		// from a start that no probe showed to pay goes back, as the
		// descent that follows would.
		fewer = e < ru.unclear || (pr.kind == double && c.unproven())
	}
	v := verdict{probe: *pr, more: more, failed: failed, e: e, se: se, a: a, b: b}
	c.pr = probe{}
	v.kept = (c.n > v.from) != fewer && !failed
	if v.kept == ru.up && more {
		c.grew = true // the larger count clearly did more
	}
	v.figures = fmt.Sprintf("%d workers did %.0f items/s, %d did %.0f", c.n, a.x*1e9, v.from, b.x*1e9)
	if failed {
		v.figures = fmt.Sprintf("%d workers failed %.2f calls per item, %d failed %.2f", c.n, a.f, v.from, b.f)
	}
	if v.kept {
		c.cur, c.high, c.fails = append(c.cur[:0], v.after...), 0, 0
		if v.kind != latency && v.kind != halve {
			c.tref = a.t // a shrink for queueing keeps the time per item it compares with
		}
	}
	if ru.up {
		return c.grown(v)
	}
	return c.shrunk(v)
}

// voided ends a shrink probe whose last h ticks took more time per item
// than its ticks before (tb) by the latency factor. Fewer workers, and
// each call slower: not what the count did (fewer calls in flight never
// wait longer) but the dependency, which changed under the probe. Its
// ticks before are void; the rise is a latency rise at the count now,
// judged against the high ticks but the first (it may straddle the
// change). One high tick waits for one more: to tell a rise from a stall.
func (c *Controller) voided(h int, tb float64) Decision {
	if h == 1 {
		return c.same()
	}
	high := c.pr.after[len(c.pr.after)-h:]
	c.pr = probe{}
	c.cur, c.high, c.tref = append(c.cur[:0], high...), h, tb
	m := mean(high)
	return c.latency(m.x, m.t, c.last(h-1))
}

// unproven says whether the count started above the least and no probe
// has shown it to do more than a smaller one.
func (c *Controller) unproven() bool { return c.start0 > c.lo && !c.grew }

// failingAt says whether calls with f errors per item (errs in all) fail: more errors per
// item than FailShare, and than the errors a failing shrink did not
// lower by FailFactor.
func (c *Controller) failingAt(f float64, errs int64) bool {
	return errs >= int64(c.t.FailMin) && f >= c.t.FailShare && f > c.t.FailFactor*c.fref
}

// failedMore says whether a probe's ticks after (mean a) failed more
// than those before (mean b): FailRise more errors per item and
// FailFactor times, with FailMin errors at least.
func (c *Controller) failedMore(after []tick, a, b tick) bool {
	return errSum(after) >= int64(c.t.FailMin) && a.f-b.f >= c.t.FailRise && a.f >= c.t.FailFactor*b.f
}

// grown carries out the verdict on a probe up: a doubling or a step.
func (c *Controller) grown(v verdict) Decision {
	reason := NoGain
	if v.failed {
		reason = Failing
		c.failedAt(c.n)
	}
	if v.kind == double {
		if v.kept {
			if m := int(c.t.CheckMargin*float64(v.from)*v.a.x/v.b.x + 0.5); v.e < c.t.PartialGain && m < c.n {
				c.checks = append(c.checks, checkAt{max(v.from, m), v.a.x})
			}
			if v.e < c.t.WeakDoubling && len(v.after) < 2 {
				c.hold = 1 // the next doubling is judged against two ticks at least
			}
			return c.same()
		}
		// Not worth it: back to the count that the throughput reached
		// needs, then check the doublings before that gained part only
		// (or, with none kept, descend from the count).
		want := min(c.n-1, max(v.from, int(float64(v.from)*v.a.x/v.b.x+0.5)))
		c.slow, c.hold = false, c.t.HoldFirst
		c.checkDue = len(c.checks) > 0
		c.back(want, v.from, v.before, v.b.t)
		if !c.grew && want > c.lo {
			c.descendFrom(want)
		}
		return c.set(want, reason, v.figures)
	}
	if v.kept {
		c.hold, c.backoff, c.short = c.t.HoldKept, c.t.HoldFirst, 0
		if c.failAt > 0 && c.n >= c.failAt {
			c.failAt = 0 // the dependency serves more than it did
		}
		if v.more && v.e-c.t.JudgeMore*v.se > c.t.ResumeSlow && !c.refused {
			c.slow = true // much more than a little: capacity grew
		}
		return c.same()
	}
	c.hold = c.backoff
	c.backoff = min(2*c.backoff, c.t.HoldMost)
	c.back(v.from, v.from, v.before, v.b.t)
	return c.set(v.from, reason, v.figures)
}
