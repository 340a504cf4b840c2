package sluice

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// The Auto controller: what a stage did between two ticks (tally,
// sample), and the decisions taken from it (controller), kept apart from
// the pool that carries them out (auto.go) so that they can be tested
// without goroutines.

// tally is what the stage's workers had done by one instant.
type tally struct {
	at                    int64
	items                 int64 // taken from the inputs
	busy, idle, throttled int64 // ns, summed over the slots
}

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
	}
	for _, e := range a.s.ins {
		t.items += e.stats().Received
	}
	return t
}

func (t tally) since(o tally) sample {
	return sample{dt: t.at - o.at, items: t.items - o.items, busy: t.busy - o.busy, idle: t.idle - o.idle, throttled: t.throttled - o.throttled}
}

// sample is what the stage did over an interval with n workers.
type sample struct {
	dt                    int64 // ns
	items                 int64
	busy, idle, throttled int64 // ns, summed over workers
	n                     int
}

func (s *sample) add(o sample, n int) {
	s.dt += o.dt
	s.items += o.items
	s.busy += o.busy
	s.idle += o.idle
	s.throttled += o.throttled
	s.n = n
}

// enough says whether a sample can decide: enough items for a time per
// item, workers mostly not working (nothing to measure, something to
// decide), or a long enough wait.
func (s sample) enough() bool {
	life := s.busy + s.idle + s.throttled
	return s.items >= int64(max(8, s.n)) || (life > 0 && float64(s.busy) < 0.6*float64(life)) || s.dt >= int64(2*time.Second)
}

// controller chooses a worker count from samples; it is a pure function
// of what it was shown, so that its decisions can be tested on their own.
//
// Every change is a probe, judged by what the stage's throughput did: its
// elasticity e, the share by which throughput changed over the share by
// which the count did (log over log: 1 when the workers added do as much
// as those before, 0 when they add nothing). More workers pay if e is at
// least minElasticity: the count goes where one more worker stops adding
// much — the cores for CPU-bound work, a dependency's capacity when its
// calls queue, the point where the machine saturates for calls that wait
// on it. Each side's throughput is the mean of its ticks; the noise is
// estimated from how throughput varies from tick to tick, and between
// windows of ticks, at a steady count; a probe is judged once e lies
// clearly on one side of the threshold — judgeMore standard errors for
// more workers, judgeFewer and two ticks for fewer — or after maxJudge
// ticks. Left unclear, a doubling keeps its workers (a worker too many
// costs time per item, which matters where a dependency queues calls, and
// there the change is clear) and a step goes back; the shrinks that
// follow evidence of queueing (checks, latency) go by the point estimate.
//
//   - Slow start doubles the count while doublings are kept. A doubling
//     not kept goes back to the count that the throughput it reached
//     needs by Little's law (the old count times the throughput ratio);
//     then, for each kept doubling that gained only part of what it
//     could, last first, a shrink checks whether the count its throughput
//     needed does as well (unless the count now does clearly more than
//     the doubling's top did: then the top did not suffice, and fewer
//     would not); left unclear, a check keeps the smaller count unless
//     the point estimate says the workers paid more than a little. A
//     check between counts a step apart weighs them as a step up does.
//     A check taken back is followed by one halfway (on a log scale)
//     between the two counts, a bisection of the doubling that crossed
//     the knee, each judged against ticks taken since the last came
//     back.
//   - At a steady count it probes a small step up, kept only if it
//     clearly pays half a worker's worth within maxJudgeStep ticks (slow
//     start resumes if it pays much), taken back as soon as it clearly
//     pays less (above a dependency's capacity its calls wait while it
//     lasts), and not tried where the noise would leave even a step that
//     pays in full unclear; a step taken back makes the next wait twice
//     as long.
//   - A time per item far above what the count had for two ticks (a
//     dependency that now serves fewer at once) starts a shrink to the
//     count that brings it back; while calls still wait (the time per
//     item above the floor, the least a busy tick has shown) the count
//     keeps halving, never below what Little's law says the throughput
//     needs at the floor, and the halving that costs is taken back to
//     the count its throughput needs. These are judged even-handedly,
//     the point estimate deciding at the end. A shrink probe whose calls
//     grow slower (fewer calls never wait longer) saw the dependency
//     change under it: it is void, and the rise starts a shrink at once.
//     No probe starts while a tick is high.
//   - Workers that wait for input or room, or on the Throttle, most of the
//     time are removed: the stage is not the bottleneck.
type controller struct {
	lo, hi int
	n      int
	slow   bool // slow start: double while each doubling pays
	// checks are the counts that shrink probes check once slow start
	// ends, last first: for each kept doubling that gained only part of
	// what it could, the count its throughput needed; after a check taken
	// back, the count halfway.
	// checkDue says it is time for the next.
	checks   []check
	checkDue bool
	cur      []tick  // the last ticks at the current count
	noise    float64 // variance of ln throughput from one tick to the next
	varied   int     // pairs of ticks it was estimated from
	drift    float64 // the same, from windows of ticks some ticks apart
	tref     float64 // time per item at the current count (ns); 0: not yet known
	floor    float64 // the least time per item of a busy tick (ns): a call that waits for nothing; 0: not yet known
	high     int     // ticks in a row with the time per item far above tref
	idle     int     // ticks in a row with the workers waiting most of the time
	idleHold int     // ticks before the next idle probe, after one was taken back
	hold     int     // ticks to wait before the next step probe
	backoff  int     // hold after the next step probe taken back
	pr       probe
}

// check is a count a shrink probe is to check, and the throughput
// (items/ns) of the doubling's top whose need it checks (0: none, a
// bisection's).
type check struct {
	n   int
	top float64
}

// tick is one sample's throughput (items/ns) and time per item (ns).
type tick struct{ x, t float64 }

// probe is a change waiting to be judged: the count before, its ticks,
// and the ticks since.
type probe struct {
	from          int
	kind          int
	before, after []tick
}

// Kinds of probe.
const (
	probeDouble  = iota + 1 // slow start
	probeStep               // a small step up from a steady count
	probeCheck              // a shrink checking a doubling that gained part of what it could
	probeLatency            // a shrink because the time per item climbed
	probeHalve              // a halving after a latency shrink that cost nothing
	probeIdle               // a shrink because the workers wait most of the time
)

const (
	minElasticity = 0.1         // a grow is kept if throughput rose by at least this share of the count's (log over log)
	judgeMore     = 1.0         // standard errors between the estimate and the threshold to judge for more workers…
	judgeFewer    = 1.5         // …and for fewer (over two ticks at least)
	maxJudge      = 8           // ticks a probe is judged over at most
	keepTicks     = 8           // ticks kept at a steady count
	holdKept      = 2           // ticks before the next step probe after one was kept
	holdFirst     = 30          // ticks before the first step probe, and after one taken back, doubling with each…
	holdMost      = 300         // …up to this
	latencyFactor = 0.6         // a time per item above tref / latencyFactor for two ticks is a latency rise
	minNoise      = 0.01 * 0.01 // the least noise a judgement assumes (variance of ln throughput per tick)
	stepRatio     = 1.0625      // a step probe's ratio (one worker at least)
	maxJudgeStep  = 5           // ticks a step probe is judged over at most
	checkMargin   = 1.0         // a check probes the count a doubling's throughput needed, times this
	partialGain   = 0.9         // a doubling with an elasticity below this gained part of what it could
	checkKeep     = 0.15        // a check left unclear keeps the workers it removed only if the point estimate of the elasticity is above this
	halveLoss     = 0.05        // a halving that clearly lost more than this share of throughput is taken back
	resumeSlow    = 0.5         // a step up with an elasticity clearly above this resumes slow start
	stepPays      = 0.5         // a step is kept if its elasticity lies clearly above this, taken back once clearly below
	queueRatio    = 1.25        // a time per item above floor times this says calls still wait
	checkFresh    = 2           // ticks at a count before a check from it
	checkStale    = 0.15        // a doubling's check is dropped once the count does this share more than its top did (one tick measured the top: three to five times its noise)
)

func newController(lo, hi, n int) *controller {
	return &controller{lo: lo, hi: hi, n: n, slow: true, noise: 0.05 * 0.05, backoff: holdFirst}
}

// step takes one sample and returns the count to run, and why it changed
// when it did.
func (c *controller) step(s sample) (n int, reason, detail string) {
	life := float64(s.busy + s.idle + s.throttled)
	if life <= 0 || s.dt <= 0 {
		return c.n, "", ""
	}
	util := float64(s.busy) / life
	tk := tick{x: float64(max(s.items, 1)) / float64(s.dt), t: float64(s.busy) / float64(max(s.items, 1))}
	if util >= 0.8 && s.items >= int64(8*s.n) && (c.floor == 0 || tk.t < c.floor) {
		// Busy workers, and enough items that those in hand at the
		// tick's ends (taken a chunk at a time) weigh little.
		c.floor = tk.t
	}
	if c.pr.from != 0 {
		n, reason, detail := c.judge(tk)
		if n != c.n || reason != "" || c.pr.from != 0 || !c.slow || c.hold > 0 {
			return n, reason, detail
		}
		// A doubling paid: the next one starts at once.
		return c.next(util, tk)
	}
	// Not the bottleneck: the workers wait most of the time, two ticks in
	// a row. Fewer workers should do the same work: those that it needs
	// (the busy share), with a margin. It is a probe too: on a machine
	// that the workers' own calls saturate, the source and sink starve and
	// the workers wait, and fewer workers would do less.
	if util < 0.6 {
		c.idle++
		c.keep(tk, false)
		c.high, c.slow, c.checkDue = 0, false, false
		want := max(c.lo, int(math.Ceil(float64(c.n)*util/0.75)))
		if c.idle < 2 || want >= c.n || c.idleHold > 0 {
			c.idleHold = max(0, c.idleHold-1)
			return c.n, "", ""
		}
		reason, why := AutoIdle, "input or room"
		if s.throttled > s.idle {
			reason, why = AutoThrottled, "the Throttle"
		}
		return c.start(want, probeIdle, c.last(c.idle), reason, fmt.Sprintf("workers busy %.0f%% of the time, waiting on %s", 100*util, why))
	}
	c.idle, c.idleHold = 0, max(0, c.idleHold-1)
	// A steady tick at the current count. A dependency saturating: its
	// calls queue, the time per item climbs at the same count. Such ticks
	// are news, not noise: they leave the noise's estimate alone.
	high := c.tref > 0 && latencyFactor*tk.t > c.tref
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
		c.tref += 0.1 * (tk.t - c.tref)
	}
	if c.high >= 2 {
		if c.n > c.lo {
			// Judged against the high ticks but the first, which may
			// have straddled the change.
			return c.latency(tk.x, tk.t, c.last(c.high-1))
		}
		c.tref, c.high = tk.t, 0 // nothing to shrink: the time per item now is the count's
	}
	if c.high > 0 {
		return c.n, "", "" // no probe against ticks from before a rise
	}
	if c.checkDue {
		if len(c.cur) < checkFresh {
			return c.n, "", "" // no other probe meanwhile
		}
		c.checkDue = false
		x, _ := mean(c.cur)
		for len(c.checks) > 0 {
			m := c.checks[len(c.checks)-1]
			c.checks = c.checks[:len(c.checks)-1]
			// A check asks whether m workers do what the top of its
			// doubling did: where the count now does clearly more, the
			// top did not suffice, and fewer than the top would not.
			if m.n < c.n && (m.top == 0 || x <= (1+checkStale)*m.top) {
				return c.start(m.n, probeCheck, c.last(5), AutoProbe,
					fmt.Sprintf("checking whether %d workers do what %d do", m.n, c.n))
			}
		}
	}
	if c.hold > 0 {
		c.hold--
		return c.n, "", ""
	}
	return c.next(util, tk)
}

// next starts the next probe up or down from a steady count: a doubling
// in slow start, a step otherwise.
func (c *controller) next(util float64, tk tick) (int, string, string) {
	canUp := util >= 0.8 && c.n < c.hi
	if c.slow {
		if canUp {
			return c.start(2*c.n, probeDouble, c.last(5), AutoGrow,
				fmt.Sprintf("workers busy %.0f%% of the time, %.0f items/s at %d", 100*util, tk.x*1e9, c.n))
		}
		c.slow = false
	}
	if !canUp {
		return c.n, "", ""
	}
	// A small step: above a dependency's capacity the calls of the
	// workers added wait a whole call each, which a p99 of a few seconds'
	// calls shows; capacity that grew much still shows clearly.
	want := stepUp(c.n)
	// A step that the noise would leave unclear even if it paid in full
	// could only be taken back: it would cost its calls and tell nothing.
	l := math.Log(float64(want) / float64(c.n))
	if se := math.Sqrt(c.sigma2()*(1.0/keepTicks+1.0/maxJudgeStep)) / l; 1-stepPays < judgeMore*se {
		c.hold = c.backoff
		return c.n, "", ""
	}
	return c.start(want, probeStep, c.last(keepTicks), AutoProbe,
		fmt.Sprintf("%.0f items/s at %d: trying %d", tk.x*1e9, c.n, want))
}

// stepUp is the count a step probe from n tries.
func stepUp(n int) int { return max(n+1, int(math.Ceil(float64(n)*stepRatio))) }

// back records what is known of count want after a probe from count from
// was taken back: the ticks before the probe if want is from, nothing
// otherwise.
func (c *controller) back(want, from int, before []tick, tb float64) {
	c.cur, c.tref, c.high = c.cur[:0], 0, 0
	if want == from {
		c.cur, c.tref = append(c.cur, before...), tb
	}
}

// start begins a probe to count want from the current one, judged
// against the ticks before.
func (c *controller) start(want, kind int, before []tick, reason, detail string) (int, string, string) {
	want = min(max(want, c.lo), c.hi)
	if want == c.n || len(before) == 0 {
		return c.n, "", ""
	}
	c.pr = probe{from: c.n, kind: kind, before: before}
	return c.set(want, reason, detail)
}

// vary updates the noise from two ticks in a row at the same count: the
// mean of the first few, then a moving average. A change of more than
// about six standard deviations counts as that much: a step (a
// dependency that slowed down) is news, not noise.
func (c *controller) vary(a, b tick) {
	d := math.Log(b.x / a.x)
	c.varied++
	v := min(d*d/2, 16*max(c.noise, minNoise))
	c.noise += max(1/float64(c.varied+1), 0.1) * (v - c.noise)
}

// keep records a steady tick at the current count (with noise, one that
// tells the noise). Once it holds
// keepTicks, the means of their two halves are compared too: a machine's
// load drifts, and ticks in a row vary less than windows some ticks apart
// (which is what a probe compares).
func (c *controller) keep(tk tick, noise bool) {
	if len(c.cur) == keepTicks {
		copy(c.cur, c.cur[1:])
		c.cur = c.cur[:keepTicks-1]
	}
	c.cur = append(c.cur, tk)
	if len(c.cur) == keepTicks && noise {
		a, _ := mean(c.cur[:keepTicks/2])
		b, _ := mean(c.cur[keepTicks/2:])
		d := math.Log(b / a)
		// d's variance is 2σ²/(keepTicks/2) for a per-tick σ².
		v := min(d*d*keepTicks/4, 16*max(c.drift, minNoise))
		c.drift += 0.1 * (v - c.drift)
	}
}

// sigma2 is the variance of ln throughput per tick that judgements
// assume.
func (c *controller) sigma2() float64 { return max(c.noise, c.drift, minNoise) }

// last returns a copy of the last k (or fewer) ticks at the current count.
func (c *controller) last(k int) []tick {
	return append([]tick(nil), c.cur[max(0, len(c.cur)-k):]...)
}

// mean returns the mean throughput and time per item of ticks; from
// three ticks on, each is their median: a tick in which the machine
// stalled the stage must neither decide nor become the reference that
// later ticks are compared with.
func mean(ts []tick) (x, t float64) {
	if len(ts) < 3 {
		for _, tk := range ts {
			x += tk.x
			t += tk.t
		}
		return x / float64(len(ts)), t / float64(len(ts))
	}
	xs, vs := make([]float64, len(ts)), make([]float64, len(ts))
	for i, tk := range ts {
		xs[i], vs[i] = tk.x, tk.t
	}
	return median(xs), median(vs)
}

// median sorts xs and returns their median.
func median(xs []float64) float64 {
	slices.Sort(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (m + xs[len(xs)/2-1]) / 2
	}
	return m
}

func (c *controller) set(n int, reason, detail string) (int, string, string) {
	if n == c.n {
		return n, "", ""
	}
	c.n = n
	return n, reason, detail
}

func dur(ns float64) time.Duration { return time.Duration(ns).Round(time.Microsecond / 10) }
