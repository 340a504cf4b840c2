package sluice

import (
	"fmt"
	"math"
)

// How the controller judges a probe and carries out its verdict (the
// rules are described at controller, in auto_control.go).

// judge adds a tick to the pending probe and decides it once the ticks
// say clearly which side of the threshold its elasticity lies on.
func (c *controller) judge(tk tick) (int, string, string) {
	pr := &c.pr
	if k := len(pr.after); k > 0 {
		c.vary(pr.after[k-1], tk)
	}
	pr.after = append(pr.after, tk)
	xb, tb := mean(pr.before)
	xa, ta := mean(pr.after)
	if h := c.risen(tb); h > 0 {
		// Fewer workers, and each call slower: not what the count did
		// (fewer calls in flight never wait longer) but the dependency,
		// which changed under the probe. Its ticks before are void; the
		// rise is a latency rise at the count now, judged against the
		// high ticks but the first (it may straddle the change).
		if h == 1 {
			// One more tick: to tell a rise from a stall, and to judge
			// the shrink against a tick that is all after the change.
			return c.n, "", ""
		}
		high := pr.after[len(pr.after)-h:]
		c.pr = probe{}
		c.cur, c.high, c.tref = append(c.cur[:0], high...), h, tb
		x, t := mean(high)
		return c.latency(x, t, c.last(h-1))
	}
	l := math.Log(float64(c.n) / float64(pr.from))
	e := math.Log(xa/xb) / l
	sx := math.Sqrt(c.sigma2() * (1/float64(len(pr.before)) + 1/float64(len(pr.after)))) // of ln(xa/xb)
	se := sx / math.Abs(l)
	// Fewer workers need the stronger case: more ticks, more standard
	// errors. Unclear after maxJudge ticks, the count with more workers
	// wins: a worker too many costs little but time per item, and where
	// that matters (a dependency queueing calls) the change is clear.
	// After a latency rise, queueing is the likelier story, and a check
	// follows a doubling that gained part only: the shrinks they start are
	// judged even-handedly, the point estimate deciding at the end.
	queued := pr.kind != probeDouble && pr.kind != probeStep
	zf := judgeFewer
	if queued {
		zf = judgeMore
	}
	// A step is judged against half a worker's worth: one that adds
	// less is not worth the time per call its workers cost where a
	// dependency queues them (a client's gaps between calls let a worker
	// past the capacity add a little), and one that clearly adds less
	// goes back at once, so that a step above a dependency's capacity
	// (its calls waiting a whole call each while it lasts) is short.
	thr := minElasticity
	if pr.kind == probeStep {
		thr, zf = stepPays, judgeMore
	}
	// A check between counts a step apart is a step down, and weighs
	// the two counts as a step up would: the larger is kept only if it
	// clearly pays half a worker's worth. Else which of the two the
	// count ends at would depend on the side it came from.
	stepDown := pr.kind == probeCheck && pr.from <= stepUp(c.n)
	if stepDown {
		thr = stepPays
	}
	// One tick decides only an overwhelming case.
	k := len(pr.after)
	more := e-thr >= judgeMore*se && (k >= 2 || e-thr >= 3*se)
	fewer := thr-e >= zf*se && k >= 2
	if pr.kind == probeHalve && k >= 2 && math.Log(xb/xa)-judgeMore*sx > -math.Log(1-halveLoss) {
		// A halving that clearly lost more than a little went below
		// what the dependency serves, however diluted its elasticity
		// over a wide step.
		more = true
	}
	if !more && !fewer && (k < maxJudge && pr.kind != probeStep || k < maxJudgeStep) {
		return c.n, "", ""
	}
	if !more && !fewer && queued {
		fewer = e < minElasticity
		if pr.kind == probeCheck {
			// Within the noise, the smaller count: the workers a check
			// removed cost time per call at a dependency that queues.
			fewer = e < checkKeep || stepDown
		}
	}
	v := verdict{probe: *pr, more: more, e: e, se: se, xa: xa, xb: xb, ta: ta, tb: tb}
	c.pr = probe{}
	v.kept = (c.n > v.from) != fewer
	if !more && !fewer && v.kind == probeStep {
		v.kept = false // a step is kept only on clear evidence
	}
	v.figures = fmt.Sprintf("%d workers did %.0f items/s, %d did %.0f", c.n, xa*1e9, v.from, xb*1e9)
	if v.kept {
		c.cur, c.high = append(c.cur[:0], v.after...), 0
		if v.kind != probeLatency && v.kind != probeHalve {
			c.tref = ta // a latency shrink keeps the time per item it compares with
		}
	}
	if v.kind == probeDouble || v.kind == probeStep {
		return c.grown(v)
	}
	return c.shrunk(v)
}

// verdict is a probe judged: the means of its ticks before and after,
// its elasticity with its standard error, and whether it is kept (more:
// clearly for more workers).
type verdict struct {
	probe
	kept, more     bool
	e, se          float64
	xa, xb, ta, tb float64
	figures        string
}

// grown carries out the verdict on a probe up: a doubling or a step.
func (c *controller) grown(v verdict) (int, string, string) {
	if v.kind == probeDouble {
		if v.kept {
			if m := int(checkMargin*float64(v.from)*v.xa/v.xb + 0.5); v.e < partialGain && m < c.n {
				c.checks = append(c.checks, check{max(v.from, m), v.xa})
			}
			if v.e < 0.5 && len(v.after) < 2 {
				c.hold = 1 // the next doubling is judged against two ticks at least
			}
			return c.n, "", ""
		}
		// Not worth it: back to the count that the throughput reached
		// needs, then check the doublings before that gained part only.
		want := min(c.n-1, max(v.from, int(float64(v.from)*v.xa/v.xb+0.5)))
		c.slow, c.hold = false, holdFirst
		c.checkDue = len(c.checks) > 0
		c.back(want, v.from, v.before, v.tb)
		return c.set(want, AutoNoGain, v.figures)
	}
	if v.kept {
		c.hold, c.backoff = holdKept, holdFirst
		if v.more && v.e-judgeMore*v.se > resumeSlow {
			c.slow = true // much more than a little: capacity grew
		}
		return c.n, "", ""
	}
	c.hold = c.backoff
	c.backoff = min(2*c.backoff, holdMost)
	c.back(v.from, v.from, v.before, v.tb)
	return c.set(v.from, AutoNoGain, v.figures)
}

// shrunk carries out the verdict on a probe down: idle, a check, a
// latency shrink or a halving.
func (c *controller) shrunk(v verdict) (int, string, string) {
	from, before := v.from, v.before
	switch v.kind {
	case probeIdle:
		if v.kept {
			c.tref, c.idle = 0, 0
			return c.n, "", ""
		}
		c.idleHold, c.idle = c.backoff, 0
	case probeCheck:
		if v.kept {
			c.checkDue = true // the next one down
			return c.n, "", ""
		}
		// The knee lies between the two counts: check halfway (on a log
		// scale) next, while a count lies between them. Each check taken
		// back halves the distance, so the count ends at the knee instead
		// of at the top of the doubling that crossed it, or a worker
		// above it (a worker past a dependency's capacity makes every
		// call wait).
		c.checks = c.checks[:0]
		if mid := int(math.Sqrt(float64(c.n)*float64(from)) + 0.5); mid > c.n && mid < from {
			c.checks, c.checkDue = append(c.checks, check{n: mid}), true
		}
		// The next check is judged against ticks taken after coming
		// back, not against this one's: ticks that the noise lifted
		// would make every check of the bisection look like a loss.
		before = nil
	default: // probeLatency, probeHalve
		if v.kept {
			// The workers removed were queueing: go on halving while
			// the calls still wait (their time above the floor), down to
			// the count Little's law says the throughput needs at the
			// floor: fewer could not do it.
			want := max(c.lo, c.n/2, c.need(v.xa))
			if c.floor > 0 && v.ta <= queueRatio*c.floor {
				want = c.n
			}
			if want < c.n {
				return c.start(want, probeHalve, c.last(5), AutoLatency,
					fmt.Sprintf("%s: trying %d", v.figures, want))
			}
			return c.n, "", ""
		}
		c.hold = holdFirst
		if v.kind == probeHalve {
			// The halving cost throughput: the dependency serves more
			// than that, as many as the throughput before needs.
			want := max(c.n+1, min(from, int(float64(c.n)*v.xb/v.xa+0.5)))
			c.back(want, from, v.before, v.tb)
			return c.set(want, AutoGrow, v.figures)
		}
		// The calls were slower for another reason than queueing (the
		// machine's own load, a slower dependency): the workers come
		// back, and the time per item before is the count's from now
		// on.
	}
	c.back(from, from, before, v.tb)
	return c.set(from, AutoGrow, v.figures)
}

// risen returns how many of a shrink probe's last ticks took more time
// per item than tb, its ticks' before, by the latency factor: 0 for a
// probe up.
func (c *controller) risen(tb float64) int {
	if c.n >= c.pr.from {
		return 0
	}
	h := 0
	for i := len(c.pr.after) - 1; i >= 0 && latencyFactor*c.pr.after[i].t > tb; i-- {
		h++
	}
	return h
}

// latency starts a shrink after the time per item rose to t at the same
// count (throughput x), judged against before: to the count that brings
// the time per item back to what it was, and no fewer than Little's law
// needs for x at the floor (while the floor is not known, no fewer than
// half).
func (c *controller) latency(x, t float64, before []tick) (int, string, string) {
	c.slow, c.checkDue, c.checks = false, false, c.checks[:0]
	if c.n <= c.lo {
		return c.n, "", ""
	}
	want := int(float64(c.n)*c.tref/t + 0.5)
	if c.floor > 0 {
		want = max(want, c.need(x))
	} else {
		want = max(want, (c.n+1)/2)
	}
	want = min(c.n-1, want)
	return c.start(want, probeLatency, before, AutoLatency,
		fmt.Sprintf("time per item %v, %.1f× the %v it was at %d workers", dur(t), t/c.tref, dur(c.tref), c.n))
}

// need is the count that Little's law says throughput x (items/ns) needs
// if no call waits (each takes the floor); 0 while the floor is not known.
// (The floor is the least seen, so the count may fall one short; a count
// exactly met is not rounded up.)
func (c *controller) need(x float64) int {
	return int(math.Ceil(x*c.floor - 1e-6))
}
