package auto

import (
	"math"
	"testing"
)

// The table says what each kind of probe keeps when the noise leaves it
// unclear: a doubling its workers, a step and a check a step apart the
// smaller count, the other shrinks by the point estimate.
func TestRulesSayWhatAnUnclearProbeKeeps(t *testing.T) {
	r := rulesOf(std)
	for _, tc := range []struct {
		k       kind
		up      bool
		unclear float64
		thr     float64
	}{
		{double, true, math.Inf(-1), std.MinElasticity},
		{step, true, math.Inf(1), std.StepPays},
		{check, false, std.CheckKeep, std.MinElasticity},
		{descent, false, std.CheckKeep, std.MinElasticity},
		{stepDown, false, math.Inf(1), std.StepPays},
		{latency, false, std.MinElasticity, std.MinElasticity},
		{halve, false, std.MinElasticity, std.MinElasticity},
		{failing, false, std.StepPays, std.StepPays},
		{idle, false, std.MinElasticity, std.MinElasticity},
		{throttle, false, std.MinElasticity, std.MinElasticity},
	} {
		got := r[tc.k]
		if got.up != tc.up || got.unclear != tc.unclear || got.threshold != tc.thr || got.maxTicks == 0 || got.zFewer == 0 || got.zMore == 0 {
			t.Errorf("%v: %+v, want up %v, unclear below %v, threshold %v, and ticks and standard errors set", tc.k, got, tc.up, tc.unclear, tc.thr)
		}
	}
	if r[halve].maxLoss != std.HalveLoss || r[latency].maxLoss != 0 {
		t.Errorf("max loss: halve %v, latency %v; want %v and 0", r[halve].maxLoss, r[latency].maxLoss, std.HalveLoss)
	}
	if r[descent].zMore != std.DescentMore || r[check].zMore != std.JudgeMore {
		t.Errorf("workers a descent removed come back at %v standard errors, a check's at %v; want %v and %v", r[descent].zMore, r[check].zMore, std.DescentMore, std.JudgeMore)
	}
	if r[step].maxTicks != std.MaxJudgeStep || r[double].zFewer != std.JudgeFewer {
		t.Errorf("step judged over %d ticks, doubling's fewer at %v standard errors; want %d and %v", r[step].maxTicks, r[double].zFewer, std.MaxJudgeStep, std.JudgeFewer)
	}
	if r[throttle].settle != 1 || !r[throttle].bound || r[idle].settle != 0 || r[idle].bound {
		t.Errorf("throttle settles %d ticks, bound %v; idle %d, %v: want only a Throttle's shrink to skip a tick and be bound by it",
			r[throttle].settle, r[throttle].bound, r[idle].settle, r[idle].bound)
	}
	for k := noProbe; k < kinds; k++ {
		if k.String() == "" {
			t.Errorf("kind %d has no name", k)
		}
	}
}

// A check to the count a step below is judged as a step: start makes it
// one.
func TestACheckAStepApartIsAStepDown(t *testing.T) {
	for _, tc := range []struct {
		from, to int
		want     kind
	}{{17, 16, stepDown}, {17, 15, check}, {32, 16, check}, {2, 1, stepDown}} {
		c := New(1, 256, tc.from, std)
		c.start(tc.to, check, []tick{{x: 1, t: 1}}, Probe, "")
		if c.pr.kind != tc.want || c.n != tc.to {
			t.Errorf("a check from %d to %d: kind %v at %d, want %v at %d", tc.from, tc.to, c.pr.kind, c.n, tc.want, tc.to)
		}
	}
}
