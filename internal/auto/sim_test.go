package auto

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// reasonsOf drives c like simulate, noise-free, and also returns the
// reasons of its changes.
func reasonsOf(c *Controller, f curve, from, ticks int) (counts []int, reasons []Reason) {
	for i := from; i < from+ticks; i++ {
		n := c.n
		dt := int64(autoTick)
		_, reason, _ := stepOf(c, Sample{Elapsed: time.Duration(dt), Workers: n, Busy: time.Duration(int64(n) * dt), Items: max(1, int64(f(n, i)*time.Duration(dt).Seconds()))})
		counts = append(counts, n)
		if reason != None {
			reasons = append(reasons, reason)
		}
	}
	return counts, reasons
}

// above counts the xs above k.
func above(xs []int, k int) int {
	n := 0
	for _, x := range xs {
		if x > k {
			n++
		}
	}
	return n
}

func within(xs []int, lo, hi int) bool {
	return slices.Min(xs) >= lo && slices.Max(xs) <= hi
}

// curve is a dependency as a stage's workers see it: the throughput
// (items/s) that n workers, all busy, get at tick i.
type curve func(n, i int) float64

// queueing serves capacity calls at once, each in base, and queues the
// rest: throughput rises with the count up to capacity, then stays.
func queueing(base time.Duration, capacity int) curve {
	return func(n, _ int) float64 { return float64(min(n, capacity)) / base.Seconds() }
}

// cpuClient is calls that wait on a dependency but cost the client CPU
// time too: throughput rises linearly up to knee workers, then by the
// power e of the count (the machine's cores saturate while each call's
// work shrinks with more in flight) up to top, then stays.
func cpuClient(base time.Duration, knee int, e float64, top int) curve {
	return func(n, _ int) float64 {
		x := float64(min(n, knee)) / base.Seconds()
		if n > knee {
			x *= math.Pow(float64(min(n, top))/float64(knee), e)
		}
		return x
	}
}

// dropping is a before tick at, b from then on.
func dropping(a, b curve, at int) curve {
	return func(n, i int) float64 {
		if i < at {
			return a(n, i)
		}
		return b(n, i)
	}
}

// noisy runs a curve on a noisy machine: each tick's throughput is
// multiplied by a lognormal factor with sd sigma, and by a drift that
// wanders slowly (the machine's other load).
type noisy struct {
	sigma float64
	rng   *rand.Rand
	drift float64
}

func (z *noisy) factor() float64 {
	if z == nil || z.sigma == 0 {
		return 1
	}
	z.drift = 0.9*z.drift + 0.3*z.sigma*z.rng.NormFloat64()
	return math.Exp(z.sigma*z.rng.NormFloat64() + z.drift)
}

// simulate drives a controller for ticks ticks from tick from against f, and returns
// the count it ran at each tick.
func simulate(c *Controller, f curve, z *noisy, from, ticks int) []int {
	counts := make([]int, 0, ticks)
	for i := from; i < from+ticks; i++ {
		n := c.n
		x := f(n, i) * z.factor()
		dt := int64(autoTick)
		items := int64(x * time.Duration(dt).Seconds())
		stepOf(c, Sample{Elapsed: time.Duration(dt), Workers: n, Busy: time.Duration(int64(n) * dt), Items: max(items, 1)})
		counts = append(counts, n)
	}
	return counts
}

// score sums up counts chosen at ticks [from, to) against f: the share of
// ticks at 90 % of the best count's throughput or more, the worst tick's
// share of it, and the mean and highest latency (time per call) against
// the best count's, weighting each tick by its calls (as a p99 of calls
// would), and the share of calls more than 1.2 times slower.
type score struct {
	at90, worst, latMean, latOver float64
	// latNear is the mean latency against the lowest latency among the
	// counts within 5 % of the best throughput: what the lab compares a
	// p99 with.
	latNear float64
}

func scoreCounts(f curve, counts []int, from, to, hi int) score {
	sc := score{at90: 0, worst: math.Inf(1)}
	var calls float64
	for i := from; i < to; i++ {
		best, bestN := 0.0, 0
		for n := 1; n <= hi; n++ {
			if x := f(n, i); x > best*1.0001 {
				best, bestN = x, n
			}
		}
		near := math.Inf(1)
		for n := 1; n <= hi; n++ {
			if x := f(n, i); x >= 0.95*best {
				near = min(near, float64(n)/x)
			}
		}
		n := counts[i]
		x := f(n, i)
		if x >= 0.9*best {
			sc.at90++
		}
		sc.latNear += x * (float64(n) / x) / near
		sc.worst = min(sc.worst, x/best)
		lat := (float64(n) / x) / (float64(bestN) / best)
		sc.latMean += x * lat
		calls += x
		if lat > 1.2 {
			sc.latOver += x
		}
	}
	sc.at90 /= float64(to - from)
	sc.latMean /= calls
	sc.latOver /= calls
	sc.latNear /= calls
	return sc
}

// checkFrom32 sets c up as if a check from 32 workers to n had just
// started, with ticks of x items/ns at 32 before it.
func checkFrom32(c *Controller, n int, x float64) {
	c.slow = false
	c.n = n
	before := make([]tick, 5)
	for i := range before {
		before[i] = tick{x: x, t: 32 / x}
	}
	c.pr = probe{from: 32, kind: check, before: before}
}

// busyTick is a sample of n workers, all busy, doing x items/ns.
func busyTick(n int, x float64) Sample {
	dt := int64(autoTick)
	return Sample{Elapsed: time.Duration(dt), Workers: n, Busy: time.Duration(int64(n) * dt), Items: int64(x * float64(dt))}
}

// stepFrom16 runs a quiet controller at 16 workers doing x items/ns
// (2 ms a call) until it tries its step up to 17, and returns it and x.
func stepFrom16(t *testing.T) (*Controller, float64) {
	t.Helper()
	c := New(1, 256, 16, std)
	c.slow, c.noise, c.varied = false, 0.005*0.005, 100
	x := 16 / 0.002e9
	for i := 0; c.pr.from == 0; i++ {
		if i > std.HoldMost {
			t.Fatal("no step probe")
		}
		stepOf(c, busyTick(16, x))
	}
	if c.n != 17 || c.pr.kind != step {
		t.Fatalf("count %d, probe kind %d: want a step to 17", c.n, c.pr.kind)
	}
	return c, x
}

// stepUntilJudged feeds c ticks of n busy workers doing x items/ns until
// the probe pending at n is judged.
func stepUntilJudged(t *testing.T, c *Controller, n int, x float64) {
	t.Helper()
	for i := 0; c.n == n; i++ {
		if i > std.MaxJudge {
			t.Fatal("the probe was not judged")
		}
		stepOf(c, busyTick(n, x))
	}
}

// std is the tuning the tests run under, and autoTick its tick.
var (
	std      = Standard()
	autoTick = std.Tick
)

// stepOf steps c with s and returns the decision's parts.
func stepOf(c *Controller, s Sample) (int, Reason, string) {
	d := c.Step(s)
	return d.Count, d.Reason, d.Why
}

// dep is a dependency as the workers see it, with what curve leaves out:
// at tick i, n workers do x items/s, their calls fail f times per item,
// and they are busy a share u of the time (the rest waiting on a
// Throttle).
type dep func(n, i int) (x, f, u float64)

// plain is a curve with no errors and no Throttle.
func plain(c curve) dep { return func(n, i int) (float64, float64, float64) { return c(n, i), 0, 1 } }

// refusing serves capacity calls at once, each in base, and refuses the
// rest at once: each worker past the capacity fails perWorker calls for
// each item the capacity serves (a Retry's backoffs between).
func refusing(base time.Duration, capacity int, perWorker float64) dep {
	return func(n, _ int) (float64, float64, float64) {
		x := float64(min(n, capacity)) / base.Seconds()
		return x, perWorker * float64(max(0, n-capacity)) / float64(capacity), 1
	}
}

// flaky is c with a share f of the calls failing, whatever the count.
func flaky(c curve, f float64) dep {
	return func(n, i int) (float64, float64, float64) { return c(n, i), f, 1 }
}

// throttled is calls of call's time under a Throttle of rate per second:
// a worker also waits for its turn at the limiter, so that n workers do
// n/(1.5 call) at most.
func throttled(rate float64, call time.Duration) dep {
	return func(n, _ int) (float64, float64, float64) {
		x := min(rate, float64(n)/(1.5*call.Seconds()))
		return x, 0, x * call.Seconds() / float64(n)
	}
}

// drive steps c for ticks ticks against d, noise-free, and returns the
// count at each tick and the reasons of the changes.
func drive(c *Controller, d dep, ticks int) (counts []int, reasons []Reason) {
	return driveNoisy(c, d, nil, ticks)
}

// driveNoisy is drive on a noisy machine (z nil: none).
func driveNoisy(c *Controller, d dep, z *noisy, ticks int) (counts []int, reasons []Reason) {
	for i := range ticks {
		n := c.n
		x, f, u := d(n, i)
		x *= z.factor()
		dt := autoTick
		items := max(1, int64(x*dt.Seconds()))
		life := time.Duration(n) * dt
		busy := time.Duration(u * float64(life))
		s := Sample{Elapsed: dt, Workers: n, Busy: busy, Throttled: life - busy, Items: items, Errors: int64(f * float64(items))}
		counts = append(counts, n)
		if r := c.Step(s).Reason; r != None {
			reasons = append(reasons, r)
		}
	}
	return counts, reasons
}

// share is the share of xs within lo–hi.
func share(xs []int, lo, hi int) float64 {
	n := 0
	for _, x := range xs {
		if x >= lo && x <= hi {
			n++
		}
	}
	return float64(n) / float64(len(xs))
}
