package auto

import (
	"sync/atomic"
	"time"
)

// Tuning is every constant the controller and its pool use. [Default]
// returns the values Auto runs with; a lab may sweep them with [Use].
type Tuning struct {
	// Tick is how often the pool samples its stage and steps the
	// controller; Settle how long it waits after a change before it
	// measures the new count.
	Tick, Settle time.Duration
	// Recheck is how often the pool starts workers while it catches up
	// with a count chosen: the new workers of a count raised, spread over
	// Settle, and after a shrink because calls fail, those that the
	// workers shed make room for as they finish their items.
	Recheck time.Duration
	// MaxSample is the longest sample the pool collects before it steps
	// the controller even with few items; EnoughItems (times the count,
	// and no fewer than EnoughItems) the items that make a sample enough.
	MaxSample   time.Duration
	EnoughItems int

	// BusyGrow is the least busy share at which more workers are tried,
	// and at which a tick may set the floor; FloorItems (items per worker)
	// the least items a tick that sets the floor has.
	BusyGrow   float64
	FloorItems int
	// IdleBelow is the busy share under which the workers wait most of
	// the time: IdleTicks such ticks in a row start an idle shrink to the
	// busy share's workers over IdleMargin.
	IdleBelow  float64
	IdleTicks  int
	IdleMargin float64
	// ThrottledUp is the throttled share of the workers' time above which
	// no probe up starts: workers added would wait on the Throttle.
	ThrottledUp float64

	// MinElasticity is what more workers must pay (log throughput over
	// log count) to be kept; StepPays what a step up, or a check a step
	// apart, must pay; ResumeSlow what a step that clearly pays more
	// resumes slow start at; PartialGain what a kept doubling below it
	// earns a check for; CheckKeep what the workers a check removed must
	// have paid, point estimate, for an unclear check to bring them back;
	// WeakDoubling what a doubling judged in one tick must pay for the
	// next to start at once.
	MinElasticity, StepPays, ResumeSlow  float64
	PartialGain, CheckKeep, WeakDoubling float64

	// JudgeMore is the standard errors between the elasticity and its
	// threshold that decide for more workers, JudgeFewer for fewer (over
	// two ticks at least); OneTick those that decide in one tick;
	// DescentMore those that bring back the workers a descent removed.
	JudgeMore, JudgeFewer, OneTick, DescentMore float64
	// MaxJudge is the ticks a probe is judged over at most, MaxJudgeStep
	// a step's; BeforeTicks the ticks a probe is judged against.
	MaxJudge, MaxJudgeStep, BeforeTicks int

	// KeepTicks is the ticks kept at a steady count; HoldKept, HoldFirst
	// and HoldMost the ticks before a step probe: after one kept, at
	// first and after one taken back (doubling with each), at most.
	KeepTicks, HoldKept, HoldFirst, HoldMost int
	// StepRatio is a step probe's ratio (one worker at least).
	StepRatio float64

	// InitialNoise is the variance of ln throughput per tick assumed
	// before any is measured, MinNoise the least a judgement assumes;
	// NoiseClamp bounds one pair's weight (times the noise); NoiseWeight
	// and DriftWeight are the moving averages' weights.
	InitialNoise, MinNoise, NoiseClamp float64
	NoiseWeight, DriftWeight           float64

	// LatencyFactor: a time per item above the count's over it, HighTicks
	// ticks in a row, is a latency rise. RefWeight moves the count's time
	// per item towards each steady tick's.
	LatencyFactor float64
	HighTicks     int
	RefWeight     float64
	// QueueRatio: a time per item above the floor times it says calls
	// still wait; HalveLoss is the share of throughput a halving that
	// clearly lost it goes back for.
	QueueRatio, HalveLoss float64

	// CheckMargin multiplies the count a doubling's throughput needed,
	// which its check probes; CheckFresh is the ticks at a count before a
	// check from it; CheckStale the share by which the count must outdo a
	// doubling's top for its check to be dropped.
	CheckMargin float64
	CheckFresh  int
	CheckStale  float64

	// FailShare is the errors per item above which a steady count fails
	// (FailTicks ticks in a row); a count fails more than another when its
	// errors per item exceed the other's by FailRise and FailFactor times,
	// with FailMin errors at least.
	FailShare, FailRise, FailFactor float64
	FailTicks, FailMin              int
}

// Default returns the tuning Auto runs with unless a lab changed it with
// [Use].
func Default() Tuning {
	if t := current.Load(); t != nil {
		return *t
	}
	return Standard()
}

// Standard returns the tuning Auto was measured with.
func Standard() Tuning {
	return Tuning{
		Tick: 100 * time.Millisecond, Settle: 25 * time.Millisecond, Recheck: 2 * time.Millisecond,
		MaxSample: 2 * time.Second, EnoughItems: 8,
		BusyGrow: 0.8, FloorItems: 8,
		IdleBelow: 0.6, IdleTicks: 2, IdleMargin: 0.75,
		ThrottledUp:   0.05,
		MinElasticity: 0.1, StepPays: 0.5, ResumeSlow: 0.5,
		PartialGain: 0.9, CheckKeep: 0.15, WeakDoubling: 0.5,
		JudgeMore: 1, JudgeFewer: 1.5, OneTick: 3, DescentMore: 2.5,
		MaxJudge: 8, MaxJudgeStep: 5, BeforeTicks: 5,
		KeepTicks: 8, HoldKept: 2, HoldFirst: 30, HoldMost: 300,
		StepRatio:    1.0625,
		InitialNoise: 0.05 * 0.05, MinNoise: 0.01 * 0.01, NoiseClamp: 16,
		NoiseWeight: 0.1, DriftWeight: 0.1,
		LatencyFactor: 0.6, HighTicks: 2, RefWeight: 0.1,
		QueueRatio: 1.25, HalveLoss: 0.05,
		CheckMargin: 1, CheckFresh: 2, CheckStale: 0.15,
		FailShare: 0.01, FailRise: 0.02, FailFactor: 2, FailTicks: 2, FailMin: 4,
	}
}

var current atomic.Pointer[Tuning]

// Use makes t the tuning of every controller made from now on, and
// returns the one before: for a lab that sweeps the tuning between runs.
// A program never calls it.
func Use(t Tuning) (was Tuning) {
	was = Default()
	current.Store(&t)
	return was
}
