package auto

import "fmt"

// Watching says whether a probe up is under way: the pool then reports
// each failed call at once with Refused, instead of at the next tick.
func (c *Controller) Watching() bool { return c.pr.kind == double || c.pr.kind == step }

// Refused takes what the stage did since a probe up began, s, when one
// of its calls failed, and returns the count to run next. A probe up
// from a count whose calls did not fail goes back to it at the first
// failed call; from a count whose calls failed, as soon as its calls
// fail more (FailRise, FailFactor, FailMin). A failed call during a
// probe up is a dependency refusing what it cannot serve, and an item
// retried against it would spend its attempts long before a tick.
// Going back, the count that failed is remembered: no doubling reaches
// it, and steps towards it shrink (see stepUp).
func (c *Controller) Refused(s Sample) Decision {
	if !c.Watching() || s.Errors < 1 {
		return c.same()
	}
	pr := c.pr
	b := mean(pr.before)
	f := float64(s.Errors) / float64(max(s.Items, 1))
	if errSum(pr.before) > 0 && (s.Errors < int64(c.t.FailMin) || f-b.f < c.t.FailRise || f < c.t.FailFactor*b.f) {
		return c.same()
	}
	c.pr = probe{}
	c.failedAt(c.n)
	c.slow, c.hold = false, c.backoff
	c.backoff = min(2*c.backoff, c.t.HoldMost)
	c.checkDue = len(c.checks) > 0
	c.back(pr.from, pr.from, pr.before, b.t)
	return c.set(pr.from, Failing, fmt.Sprintf("%d workers failed %d calls in %d items at once, %d failed %.2f per item", c.n, s.Errors, s.Items, pr.from, b.f))
}

// failedAt records that calls failed more at count n than at the count
// below: the least such count is where probes up stop short of.
func (c *Controller) failedAt(n int) {
	c.refused = true
	if c.failAt == 0 || n < c.failAt {
		c.failAt = n
	}
}
