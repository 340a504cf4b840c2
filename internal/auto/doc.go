// Package auto chooses the worker count of a stage given sluice.Auto:
// samples in, a [Decision] out. A [Controller] is a pure function of the
// samples it is shown (no clock, no goroutine); the pool in the root
// package samples the stage every Tuning.Tick, steps the controller and
// carries out its decisions. Every constant below is a field of [Tuning].
//
// # What it sees
//
// A [Sample] is what the stage's workers did since the last: the items
// they took, their time working (calls of the function included), waiting
// for input or room, or waiting on a Throttle, and the calls that returned
// an error (retries and timeouts included). From it the controller knows
// the stage's throughput, its time per item, its busy share and its errors
// per item.
//
// # Probes, and how they are judged
//
// Every change of the count is a probe, judged by what throughput did: its
// elasticity e, the share by which throughput changed over the share by
// which the count did (log over log: 1 when the workers added do as much
// as those before, 0 when they add nothing). Each side's throughput is the
// median of its ticks; the noise is estimated from how throughput varies
// from tick to tick, and between windows of ticks, at a steady count. A
// probe is judged once e lies clearly on one side of its threshold, or
// after MaxJudge ticks by the point estimate; the thresholds, standard
// errors and what an unclear probe keeps are one table, one row per kind
// of probe (rules.go). A probe up whose calls fail more than the count
// before (FailRise more errors per item, FailFactor times) goes back at
// once, whatever throughput did; and it is watched between ticks: the
// pool reports each failed call at once ([Controller.Refused]), and a
// probe up from a count whose calls did not fail goes back at the first
// (from one whose calls failed, as soon as they fail more). A dependency
// refusing what it cannot serve would otherwise make an item retried
// against it spend its attempts before the next tick.
//
// # The rules
//
//   - Slow start doubles the count from the start while each doubling
//     pays. A doubling not kept goes back to the count that the throughput
//     it reached needs by Little's law (the old count times the throughput
//     ratio): CPU-bound work past the free cores, a dependency that serves
//     no more at once, or refuses the calls past what it serves. Then, for
//     each kept doubling that gained only part of what it could, last
//     first, a check (a shrink) asks whether the count its throughput
//     needed does as well, unless the count now does clearly more than
//     the doubling's top did. A check taken back is followed by one
//     halfway (on a log scale) between the two counts, a bisection of the
//     doubling that crossed the knee.
//   - From a start above the least count, a doubling that the noise
//     leaves unclear goes back while no probe has shown the count to pay.
//     Slow start that ends with no doubling kept (a start above what the
//     work needs, or at the max) descends: checks halve the count while
//     fewer workers do as much, and the first that costs throughput starts
//     the bisection. A count that does no more than a smaller one is shed
//     whatever the start.
//   - At a steady count it probes a small step up (StepRatio, one worker
//     at least), kept only if it clearly pays half a worker's worth
//     (slow start resumes if it pays much), taken back as soon as it
//     clearly pays less (above a dependency's capacity its calls wait
//     while it lasts), and not tried where the noise would leave even a
//     step that pays in full unclear. A step taken back doubles the wait
//     before the next, from HoldFirst ticks up to HoldMost.
//   - A time per item far above what the count had (LatencyFactor,
//     HighTicks ticks in a row: a dependency that now serves fewer at
//     once) starts a shrink to the count that brings it back; while calls
//     still wait (the time per item above QueueRatio times the floor, the
//     least a busy tick has shown) the count keeps halving, never below
//     what Little's law says the throughput needs at the floor, and the
//     halving that costs is taken back to the count its throughput needs.
//     A shrink probe whose calls grow slower saw the dependency change
//     under it (fewer calls never wait longer): it is void, and the rise
//     starts a shrink at once.
//   - Calls that fail at a steady count (more than FailShare errors per
//     item f, FailTicks ticks in a row: a dependency refusing or timing
//     out what it cannot serve) shrink the count to n/(1+f) rounded up
//     (the count whose calls would all have succeeded had each failed
//     call taken a worker's place; one fewer at least, half at most), and
//     again while the last tick still fails. A shrink is taken back only
//     if the workers it removed clearly paid half a worker's worth each:
//     when the errors went, to the count the throughput before needs but
//     below the count that failed (none lying between, the count stays);
//     when they did not, to the count before (then they are not the
//     count's doing, and only errors well above them count as failing
//     from then on). Once calls have failed with more workers, a step
//     that pays much does not resume slow start: a doubling past a
//     dependency that refuses calls costs a burst of errors, and steps
//     find a capacity that grew. The least count whose calls failed
//     more than a smaller count's is remembered: no doubling reaches it,
//     and a step below it goes no more than half the way there (one
//     worker at least), until a step to it or past it is kept.
//   - Workers that wait for input or room, or on the Throttle, most of
//     the time (a busy share under IdleBelow, IdleTicks ticks in a row)
//     are removed, down to the busy share's workers with a margin: the
//     stage is not the bottleneck. On a machine that the workers' own
//     calls saturate the source starves too, so this is a probe as well:
//     one that costs throughput is taken back — after a Throttle's, only
//     to the count the throughput before needs. A shrink of workers that
//     waited on the Throttle is judged from its second tick on (the
//     workers shed held the limiter's next turns, which the first tick
//     lacks), and kept while the workers left still wait on it most of
//     the time (a busy share under IdleBelow): the Throttle, not the
//     count, sets the throughput. No probe up starts while the workers
//     wait on the Throttle more than ThrottledUp of the time: workers
//     added would only wait there.
//
// A decision never leaves the bounds the controller was made with.
package auto
