package sluice

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/auto"
)

// Auto makes the engine choose a stage's worker count, between lo and hi
// goroutines, instead of keeping the n given: n is then the count it starts
// with, and must lie within the bounds (the stage panics otherwise). It
// applies to every stage with a pool of workers: [Map], [Filter],
// [FlatMap], [OrderedMap], [ForEach] and [ForEachChunk]; any other stage
// panics when given it.
//
// Every 100 ms the engine looks at what the stage did since its last look
// (items taken, time working, waiting for input or room or on a
// [Throttle], calls that failed) and changes the count as a probe, judged
// by how throughput answered it: it grows while more workers raise
// throughput, sheds workers that add nothing, whose calls queue (the time
// per call climbs) or fail (errors or timeouts per call rise with the
// count), and workers that mostly wait; it never adds workers that would
// only wait on the Throttle. The rules are described in full in the doc of
// package internal/auto.
//
// A stage never runs more than hi goroutines, nor fewer than lo while its
// input lasts. A worker added at run time is owned by the pipeline like
// every other; a worker removed finishes its chunk, hands on what it
// holds and exits, so no item is lost or repeated; a worker removed while
// it waits for input exits at once. With hi > 1 output
// order is not input order, except for OrderedMap, whose default [Reorder] bound
// is then four full chunks per worker of hi. [StageStats] show the count,
// its bounds and why it last changed ([AutoStats]).
//
// A stage given Auto panics, naming its bounds, unless 1 ≤ lo ≤ hi ≤ 4096.
func Auto(lo, hi int) StageOption {
	if lo < 1 || hi < lo || hi > maxAutoWorkers {
		return invalid(fitsPool, "Auto", fmt.Sprintf("Auto(%d, %d): want 1 ≤ min ≤ max ≤ %d", lo, hi, maxAutoWorkers))
	}
	return option(fitsPool, fmt.Sprintf("Auto(%d, %d)", lo, hi), func(c *stageConfig) { c.autoMin, c.autoMax = lo, hi })
}

// maxAutoWorkers bounds Auto's max: each possible worker costs a slot in
// the stage's per-worker tallies.
const maxAutoWorkers = 4096

// AutoReason is why a stage's worker count last changed, as
// [AutoStats].Reason says it.
type AutoReason int

const (
	AutoStart     = AutoReason(auto.Start)     // the count the stage was built with
	AutoGrow      = AutoReason(auto.Grow)      // more workers raised throughput, or workers removed are brought back
	AutoNoGain    = AutoReason(auto.NoGain)    // throughput did not rise with the workers last added
	AutoLatency   = AutoReason(auto.Latency)   // the time per item climbed above what it was at the same count
	AutoFailing   = AutoReason(auto.Failing)   // calls failed (errors or timeouts) more with more workers
	AutoIdle      = AutoReason(auto.Idle)      // workers waited for input or room most of the time
	AutoThrottled = AutoReason(auto.Throttled) // workers waited on the stage's Throttle most of the time
	AutoProbe     = AutoReason(auto.Probe)     // a step to a count nearby, to see whether it does better
)

// String returns the reason's name: "start", "grow", "no-gain",
// "latency", "failing", "idle", "throttled" or "probe".
func (r AutoReason) String() string {
	if r == 0 || !auto.Reason(r).Valid() {
		return fmt.Sprintf("AutoReason(%d)", int(r))
	}
	return auto.Reason(r).String()
}

// AutoStats describes the worker count the engine chooses for a stage
// with [Auto] (its rules: the doc of package internal/auto).
type AutoStats struct {
	Min, Max int // the bounds given to Auto
	// Reason is why the count last changed; Detail says it with the
	// figures that decided it, Changed when, and Changes counts the
	// changes since the start.
	Reason  AutoReason
	Detail  string
	Changed time.Time
	Changes int64
}
