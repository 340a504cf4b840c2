package auto

import (
	"fmt"
	"math"
	"time"
)

// Controller chooses a stage's worker count from samples of what the
// stage did, under the rules of the package doc. It is a pure function
// of the samples it was shown: no clock, no goroutine. The zero value is
// not usable; make one with New.
type Controller struct {
	t      Tuning
	rules  [kinds]rule
	lo, hi int
	n      int
	start0 int  // the count it started with
	slow   bool // slow start: double while each doubling pays
	// grew says that a probe showed the count doing more than a smaller
	// one; descend, that slow start ended without it, and checks halve the
	// count until one costs throughput.
	grew, descend bool
	short         int  // the count a check last found doing less than the count it checked; 0: none
	confirm       bool // the check under way checks short again
	// checks are the counts that shrink probes check, last first: for each
	// kept doubling that gained only part of what it could, the count its
	// throughput needed; after a check taken back, the count halfway;
	// while descending, half the count. checkDue says it is time for the
	// next.
	checks   []checkAt
	checkDue bool
	cur      []tick  // the last ticks at the current count
	noise    float64 // variance of ln throughput from one tick to the next
	varied   int     // pairs of ticks it was estimated from
	drift    float64 // the same, from windows of ticks some ticks apart
	tref     float64 // time per item at the current count (ns); 0: not yet known
	floor    float64 // the least time per item of a busy tick (ns): a call that waits for nothing; 0: not yet known
	fref     float64 // errors per item that a failing shrink did not lower: not the count's doing
	refused  bool    // calls failed more with more workers, or at the start: steps probe past the count, not doublings
	failAt   int     // the least count whose calls failed more than a smaller count's; 0: none
	high     int     // ticks in a row with the time per item far above tref
	fails    int     // ticks in a row with the calls failing
	idle     int     // ticks in a row with the workers waiting most of the time
	idleHold int     // ticks before the next idle probe, after one was taken back
	hold     int     // ticks to wait before the next step probe
	backoff  int     // hold after the next step probe taken back
	pr       probe
}

// checkAt is a count a check is to probe, and the throughput (items/ns)
// of the doubling's top whose need it checks (0: none).
type checkAt struct {
	n   int
	top float64
}

// probe is a change waiting to be judged: the count before, its ticks,
// and the ticks since (those its rule lets settle left out).
type probe struct {
	from          int
	kind          kind
	reason        Reason // the reason it started with
	before, after []tick
	settled       int // ticks let settle
}

// New returns a controller for a stage that may run lo to hi workers and
// starts with n, under tuning t. It panics unless 1 ≤ lo ≤ n ≤ hi.
func New(lo, hi, n int, t Tuning) *Controller {
	if lo < 1 || n < lo || hi < n {
		panic(fmt.Sprintf("auto: New(%d, %d, %d): want 1 ≤ lo ≤ n ≤ hi", lo, hi, n))
	}
	return &Controller{t: t, rules: rulesOf(t), lo: lo, hi: hi, n: n, start0: n, slow: true, noise: t.InitialNoise, backoff: t.HoldFirst}
}

// Count returns the count the controller runs.
func (c *Controller) Count() int { return c.n }

// Step takes one sample, taken at the count the controller runs, and
// returns the count to run next, with why when it changed.
func (c *Controller) Step(s Sample) Decision {
	if s.Busy+s.Idle+s.Throttled <= 0 || s.Elapsed <= 0 {
		return c.same()
	}
	tk, util, throttled := tickOf(s)
	if util >= c.t.BusyGrow && s.Items >= int64(c.t.FloorItems*s.Workers) && (c.floor == 0 || tk.t < c.floor) {
		// Busy workers, and enough items that those in hand at the
		// tick's ends (taken a chunk at a time) weigh little.
		c.floor = tk.t
	}
	if c.pr.kind != noProbe {
		d := c.judge(tk)
		if d.Reason != None || c.pr.kind != noProbe || !c.slow || c.hold > 0 {
			return d
		}
		return c.next(util, throttled, tk) // a doubling paid: the next one starts at once
	}
	if util < c.t.IdleBelow {
		return c.waiting(s, util, tk)
	}
	c.idle, c.idleHold = 0, max(0, c.idleHold-1)
	if d, ok := c.steady(tk); ok {
		return d
	}
	if c.checkDue {
		if d, ok := c.nextCheck(); ok {
			return d
		}
	}
	if c.hold > 0 {
		c.hold--
		return c.same()
	}
	return c.next(util, throttled, tk)
}

// waiting takes a tick in which the workers waited most of the time,
// for input or room or on the Throttle: the stage is not the bottleneck.
// After IdleTicks of them, fewer workers should do the same work: those
// the busy share needs, with a margin. It is a probe too: on a machine
// that the workers' own calls saturate, the source and sink starve and
// the workers wait, and fewer workers would do less.
func (c *Controller) waiting(s Sample, util float64, tk tick) Decision {
	c.idle++
	c.keep(tk, false)
	c.high, c.fails, c.slow, c.checkDue, c.descend, c.confirm, c.short = 0, 0, false, false, false, false, 0
	want := max(c.lo, int(math.Ceil(float64(c.n)*util/c.t.IdleMargin)))
	if c.idle < c.t.IdleTicks || want >= c.n || c.idleHold > 0 {
		c.idleHold = max(0, c.idleHold-1)
		return c.same()
	}
	k, reason, why := idle, Idle, "input or room"
	if s.Throttled > s.Idle {
		k, reason, why = throttle, Throttled, "the Throttle"
	}
	return c.start(want, k, c.last(c.idle), reason, fmt.Sprintf("workers busy %.0f%% of the time, waiting on %s", 100*util, why))
}

// steady takes a tick at the current count with the workers busy. A
// dependency saturating queues calls, and the time per item climbs at
// the same count; or it refuses them, and they fail. Such ticks are news,
// not noise: they leave the noise's estimate alone. It returns a
// decision, and true, when they start a shrink or hold probes back.
func (c *Controller) steady(tk tick) (Decision, bool) {
	high := c.tref > 0 && c.t.LatencyFactor*tk.t > c.tref
	if k := len(c.cur); k > 0 && !high {
		c.vary(c.cur[k-1], tk)
	}
	c.keep(tk, !high)
	if c.tref == 0 {
		c.tref = tk.t
	}
	if high {
		c.high++
	} else {
		c.high = 0
		c.tref += c.t.RefWeight * (tk.t - c.tref)
	}
	if c.high >= c.t.HighTicks {
		if c.n > c.lo {
			// Judged against the high ticks but the first, which may
			// have straddled the change.
			return c.latency(tk.x, tk.t, c.last(c.high-1)), true
		}
		c.tref, c.high = tk.t, 0 // nothing to shrink: the time per item now is the count's
	}
	if c.high > 0 {
		return c.same(), true // no probe against ticks from before a rise
	}
	if c.failingAt(tk.f, tk.errs) {
		c.fails++
	} else {
		c.fails = 0
	}
	if c.fails >= c.t.FailTicks {
		if c.n > c.lo {
			return c.failShrink(tk, c.last(c.fails)), true
		}
		c.fref, c.fails = max(c.fref, tk.f), 0 // at the least count, the errors are not the count's doing
	}
	return c.same(), c.fails > 0
}

// nextCheck starts the next check, if one is due and still stands.
func (c *Controller) nextCheck() (Decision, bool) {
	if len(c.cur) < c.t.CheckFresh {
		return c.same(), true // no other probe meanwhile
	}
	c.checkDue = false
	x := mean(c.cur).x
	for len(c.checks) > 0 {
		m := c.checks[len(c.checks)-1]
		c.checks = c.checks[:len(c.checks)-1]
		// A check asks whether m workers do what the top of its doubling
		// did: where the count now does clearly more, the top did not
		// suffice, and fewer than the top would not.
		if m.n < c.n && (m.top == 0 || x <= (1+c.t.CheckStale)*m.top) {
			k := check
			if c.descend {
				k = descent
			}
			return c.start(m.n, k, c.last(c.t.BeforeTicks), Probe,
				fmt.Sprintf("checking whether %d workers do what %d do", m.n, c.n)), true
		}
	}
	return c.same(), false
}

// next starts the next probe up from a steady count: a doubling in slow
// start, a step otherwise. Slow start that ends with no doubling kept
// (the count started above what the work needs, or at the max) starts
// the descent: checks of half the count.
func (c *Controller) next(util, throttled float64, tk tick) Decision {
	canUp := util >= c.t.BusyGrow && throttled <= c.t.ThrottledUp && c.n < c.hi
	if c.slow && c.failAt > 0 && 2*c.n >= c.failAt {
		c.slow = false // no doubling into a count that failed
	}
	if c.slow {
		if canUp {
			return c.start(2*c.n, double, c.last(c.t.BeforeTicks), Grow,
				fmt.Sprintf("workers busy %.0f%% of the time, %.0f items/s at %d", 100*util, tk.x*1e9, c.n))
		}
		c.slow = false
		if !c.grew && c.n > c.lo {
			c.descendFrom(c.n)
			return c.same()
		}
	}
	if !canUp {
		return c.same()
	}
	want := c.stepUp(c.n)
	// A step that the noise would leave unclear even if it paid in full
	// could only be taken back: it would cost its calls and tell nothing.
	l := math.Log(float64(want) / float64(c.n))
	if se := math.Sqrt(c.sigma2()*(1.0/float64(c.t.KeepTicks)+1.0/float64(c.t.MaxJudgeStep))) / l; 1-c.t.StepPays < c.t.JudgeMore*se {
		c.hold = c.backoff
		return c.same()
	}
	return c.start(want, step, c.last(c.t.KeepTicks), Probe,
		fmt.Sprintf("%.0f items/s at %d: trying %d", tk.x*1e9, c.n, want))
}

// descendFrom queues a check of half of n, after the checks queued.
func (c *Controller) descendFrom(n int) {
	c.descend = true
	c.checks = append([]checkAt{{n: max(c.lo, n/2)}}, c.checks...)
	c.checkDue = true
}

// stepUp is the count a step probe from n tries: StepRatio more, one
// worker at least; below a count that failed, no more than half the
// way to it.
func (c *Controller) stepUp(n int) int {
	up := max(n+1, int(math.Ceil(float64(n)*c.t.StepRatio)))
	if c.failAt > n {
		up = min(up, max(n+1, n+(c.failAt-n)/2))
	}
	return up
}

// start begins a probe of kind k to count want from the current one,
// judged against the ticks before.
func (c *Controller) start(want int, k kind, before []tick, r Reason, why string) Decision {
	want = min(max(want, c.lo), c.hi)
	if want == c.n || len(before) == 0 {
		return c.same()
	}
	if k == check && c.n <= c.stepUp(want) {
		k = stepDown
	}
	c.pr = probe{from: c.n, kind: k, reason: r, before: before}
	return c.set(want, r, why)
}

// back records what is known of count want after a probe from count from
// was taken back: the ticks before the probe if want is from, nothing
// otherwise.
func (c *Controller) back(want, from int, before []tick, tb float64) {
	c.cur, c.tref, c.high, c.fails = c.cur[:0], 0, 0, 0
	if want == from {
		c.cur, c.tref = append(c.cur, before...), tb
	}
}

// last returns a copy of the last k (or fewer) ticks at the current count.
func (c *Controller) last(k int) []tick {
	return append([]tick(nil), c.cur[max(0, len(c.cur)-k):]...)
}

func (c *Controller) same() Decision { return Decision{Count: c.n} }

func (c *Controller) set(n int, r Reason, why string) Decision {
	if n == c.n {
		return c.same()
	}
	c.n = n
	return Decision{Count: n, Reason: r, Why: why}
}

func dur(ns float64) time.Duration { return time.Duration(ns).Round(time.Microsecond / 10) }
