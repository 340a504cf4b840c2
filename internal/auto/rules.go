package auto

import "math"

// kind is what a probe tries.
type kind uint8

const (
	noProbe  kind = iota
	double        // slow start: twice the count
	step          // a small step up from a steady count
	check         // a shrink checking whether fewer workers do what the count does
	descent       // a check of half the count, from a count no probe showed to pay
	stepDown      // a check to the count a step below
	latency       // a shrink because the time per item climbed
	halve         // a halving after a latency shrink that cost nothing
	failing       // a shrink because calls fail
	idle          // a shrink because the workers wait for input or room most of the time
	throttle      // a shrink because the workers wait on the Throttle most of the time
	kinds
)

var kindNames = [kinds]string{"none", "double", "step", "check", "descent", "step-down", "latency", "halve", "failing", "idle", "throttle"}

func (k kind) String() string { return kindNames[k] }

// rule is how a kind of probe is judged. A probe's elasticity e (log
// throughput over log count) is compared with threshold: e clearly above
// it (zMore standard errors) decides for more workers, clearly below
// (zFewer, over two ticks) for fewer. Unclear after maxTicks, the point
// estimate decides: fewer workers if e < unclear (−∞: the more, +∞: the
// fewer). A shrink that clearly lost more than maxLoss of the throughput
// goes back however diluted its elasticity (0: no such rule). The first
// settle ticks after the change are not judged; bound keeps a shrink
// whose workers still wait on the Throttle so much that they are idle
// (a busy share under IdleBelow), whatever throughput did: the Throttle,
// not the count, sets it, and more workers would only be shed again.
type rule struct {
	up        bool
	threshold float64
	zMore     float64
	zFewer    float64
	maxTicks  int
	unclear   float64
	maxLoss   float64
	settle    int
	bound     bool
}

// rulesOf is the table of rules under t.
//
//   - A doubling is kept unless it clearly pays less than MinElasticity:
//     a worker too many costs only time per item, and where that matters
//     (a dependency queueing calls) the change is clear.
//   - A step must clearly pay half a worker's worth, and goes back as soon
//     as it clearly does not: above a dependency's capacity its calls wait
//     a whole call each while it lasts.
//   - The shrinks that follow evidence of queueing (checks, latency,
//     halvings, idle) are judged even-handedly, the point estimate
//     deciding at the end; a check left unclear keeps the smaller count
//     unless the workers it removed paid more than CheckKeep. A check a
//     step apart weighs the two counts as a step up would, so that where
//     the count ends does not depend on the side it came from.
//   - A descent's halving brings the workers back only on strong
//     evidence (DescentMore standard errors): a halving from above a
//     dependency's capacity costs nothing, and one taken back on noise
//     would leave the count at twice what it needs; one from the
//     capacity costs half the throughput, which is clear at once.
//   - A failing shrink brings workers back only for half a worker's
//     worth each: their errors are a cost too.
//   - A shrink of workers that waited on the Throttle is judged from its
//     second tick on (the workers shed held the limiter's next turns,
//     which the first tick lacks), and kept while the workers left still
//     wait on the Throttle most of the time: more would only wait there.
func rulesOf(t Tuning) [kinds]rule {
	inf := math.Inf(1)
	m, f := t.JudgeMore, t.JudgeFewer
	even := rule{threshold: t.MinElasticity, zMore: m, zFewer: m, maxTicks: t.MaxJudge, unclear: t.MinElasticity}
	r := [kinds]rule{
		double:   {up: true, threshold: t.MinElasticity, zMore: m, zFewer: f, maxTicks: t.MaxJudge, unclear: -inf},
		step:     {up: true, threshold: t.StepPays, zMore: m, zFewer: m, maxTicks: t.MaxJudgeStep, unclear: inf},
		check:    {threshold: t.MinElasticity, zMore: m, zFewer: m, maxTicks: t.MaxJudge, unclear: t.CheckKeep},
		descent:  {threshold: t.MinElasticity, zMore: t.DescentMore, zFewer: m, maxTicks: t.MaxJudge, unclear: t.CheckKeep},
		stepDown: {threshold: t.StepPays, zMore: m, zFewer: m, maxTicks: t.MaxJudge, unclear: inf},
		latency:  even,
		halve:    even,
		failing:  {threshold: t.StepPays, zMore: m, zFewer: m, maxTicks: t.MaxJudge, unclear: t.StepPays},
		idle:     even,
		throttle: even,
	}
	r[throttle].settle, r[throttle].bound = 1, true
	r[halve].maxLoss = t.HalveLoss
	return r
}
