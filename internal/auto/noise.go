package auto

import "math"

// vary updates the noise from two ticks in a row at the same count: the
// mean of the first few, then a moving average. A change of more than a
// few standard deviations counts as that much: a step (a dependency that
// slowed down) is news, not noise.
func (c *Controller) vary(a, b tick) {
	d := math.Log(b.x / a.x)
	c.varied++
	v := min(d*d/2, c.t.NoiseClamp*max(c.noise, c.t.MinNoise))
	c.noise += max(1/float64(c.varied+1), c.t.NoiseWeight) * (v - c.noise)
}

// keep records a steady tick at the current count (with noise, one that
// tells the noise). Once it holds KeepTicks, the means of their two
// halves are compared too: a machine's load drifts, and ticks in a row
// vary less than windows some ticks apart (which is what a probe
// compares).
func (c *Controller) keep(tk tick, noise bool) {
	k := c.t.KeepTicks
	if len(c.cur) >= k {
		c.cur = append(c.cur[:0], c.cur[len(c.cur)-k+1:]...)
	}
	c.cur = append(c.cur, tk)
	if len(c.cur) == k && noise {
		a, b := mean(c.cur[:k/2]).x, mean(c.cur[k/2:]).x
		d := math.Log(b / a)
		// d's variance is 2σ²/(k/2) for a per-tick σ².
		v := min(d*d*float64(k)/4, c.t.NoiseClamp*max(c.drift, c.t.MinNoise))
		c.drift += c.t.DriftWeight * (v - c.drift)
	}
}

// sigma2 is the variance of ln throughput per tick that judgements
// assume.
func (c *Controller) sigma2() float64 { return max(c.noise, c.drift, c.t.MinNoise) }
