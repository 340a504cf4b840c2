package auto

import (
	"math"
	"testing"
	"time"
)

// A probe is judged over as many ticks as the noise needs: a doubling
// that gains nothing is taken back after two ticks when throughput varies
// little from tick to tick, after more when it varies more, and kept
// when after std.MaxJudge ticks it is still unclear; one that doubles
// throughput is kept after one.
func TestControllerJudgesOverAsManyTicksAsTheNoiseNeeds(t *testing.T) {
	judged := func(sigma, gain float64) (ticks, n int) {
		c := New(1, 256, 16, std)
		c.noise, c.varied, c.slow, c.grew = sigma*sigma, 100, true, true
		c.cur = []tick{{x: 0.01, t: 1600}, {x: 0.01, t: 1600}} // as the samples below
		stepOf(c, Sample{Elapsed: time.Duration(int64(autoTick)), Workers: 16, Busy: time.Duration(16 * int64(autoTick)), Items: int64(autoTick) / 100})
		if c.n != 32 || c.pr.from != 16 {
			t.Fatalf("count %d, probe from %d: want a doubling from 16", c.n, c.pr.from)
		}
		for ticks = 1; ticks <= std.MaxJudge; ticks++ {
			items := int64(float64(autoTick) / 100 * gain)
			stepOf(c, Sample{Elapsed: time.Duration(int64(autoTick)), Workers: 32, Busy: time.Duration(32 * int64(autoTick)), Items: items})
			if c.pr.from != 16 {
				return ticks, c.n
			}
		}
		t.Fatalf("σ %.2f, gain %.2f: not judged after %d ticks", sigma, gain, std.MaxJudge)
		return 0, 0
	}
	if ticks, n := judged(0.01, 1); ticks != 2 || n != 16 {
		t.Fatalf("no gain, 1%% noise: judged after %d ticks to %d workers, want 2 and 16", ticks, n)
	}
	if ticks, n := judged(0.08, 1); ticks <= 2 || n != 16 {
		t.Fatalf("no gain, 8%% noise: judged after %d ticks to %d workers, want more than 2 and 16", ticks, n)
	}
	// Kept, slow start goes on: the next doubling starts at once.
	if ticks, n := judged(0.2, 1); ticks != std.MaxJudge || n != 64 {
		t.Fatalf("no gain, 20%% noise: judged after %d ticks to %d workers, want %d (unclear) and 64", ticks, n, std.MaxJudge)
	}
	if ticks, n := judged(0.05, 2); ticks != 1 || n != 64 {
		t.Fatalf("twice the throughput, 5%% noise: judged after %d ticks to %d workers, want 1 and 64", ticks, n)
	}
}

// A check left unclear by the noise keeps the smaller count unless the
// workers it removed paid more than a little.
func TestControllerKeepsTheSmallerCountWhenACheckIsUnclear(t *testing.T) {
	for _, tc := range []struct {
		e    float64 // the elasticity the check measures
		want int
	}{{0.12, 18}, {0.3, 32}} {
		c := New(1, 256, 32, std)
		c.noise, c.varied = 0.3*0.3, 100 // so noisy that nothing is clear
		checkFrom32(c, 18, 0.01)
		x := 0.01 * math.Pow(18.0/32, tc.e)
		for range std.MaxJudge {
			stepOf(c, busyTick(18, x))
		}
		if c.pr.from != 0 || c.n != tc.want {
			t.Errorf("elasticity %.2f: count %d (probe pending from %d), want %d after %d unclear ticks", tc.e, c.n, c.pr.from, tc.want, std.MaxJudge)
		}
	}
}

// A check between counts a step apart weighs them as a step up would:
// the larger is kept only if it clearly pays half a worker's worth. Here
// 17 workers did 4 % more than 16 (an elasticity of 0.65, unclear
// against half a worker's worth in this noise): a step from 16 would not
// have been kept, so the check keeps 16 (in the lab, a check like it
// kept 17 workers for a dependency of 16, and their p99 was 1.43 times
// fixed 16's).
func TestControllerWeighsACheckAStepApartAsAStep(t *testing.T) {
	c := New(1, 256, 17, std)
	c.slow, c.noise, c.varied = false, 0.02*0.02, 100
	x := 16 / 0.002e9
	before := make([]tick, 5)
	for i := range before {
		before[i] = tick{x: 1.04 * x, t: 17 / (1.04 * x)}
	}
	c.n = 16
	c.pr = probe{from: 17, kind: stepDown, before: before}
	for i := 0; c.pr.from != 0; i++ {
		if i >= std.MaxJudge {
			t.Fatal("the check was not judged")
		}
		stepOf(c, busyTick(16, x*(1+0.015*float64(1-2*(i%2))))) // ±1.5 %: the noise stays
	}
	if c.n != 16 {
		t.Errorf("count %d after a check of 16 against 17 doing 4 %% more, want 16", c.n)
	}
}

// A tick in which the machine stalled the stage, among those a probe is
// judged against, does not become the time per item later ticks are
// compared with: a latency rise after the probe is still seen.
func TestControllerSeesARiseAfterAStallInItsReference(t *testing.T) {
	c := New(1, 256, 32, std)
	c.noise, c.varied = 0.01*0.01, 100
	x := 32 / 0.002e9
	checkFrom32(c, 24, x)
	c.pr.before[2] = tick{x: x / 100, t: 100 * 32 / x} // stalled
	stepUntilJudged(t, c, 24, 24/0.002e9)
	if c.n != 32 {
		t.Fatalf("count %d after a check that cost a quarter of the throughput, want 32 back", c.n)
	}
	slow := 8 / 0.002e9 // the dependency now serves 8
	stepOf(c, busyTick(32, slow))
	if n, reason, _ := stepOf(c, busyTick(32, slow)); n >= 32 || reason != Latency {
		t.Fatalf("count %d (%q) after two ticks four times slower, want fewer (%q)", n, reason, Latency)
	}
}

// A dependency that serves fewer while a check is under way: the check's
// ticks before are void (fewer workers never make a call slower), and
// the count falls to what the new capacity needs at once instead of
// going back up and waiting for the latency rule.
func TestControllerShrinksWhenTheDependencyDropsUnderACheck(t *testing.T) {
	c := New(1, 256, 32, std)
	c.noise, c.varied = 0.01*0.01, 100
	c.floor = 0.002e9 // 2 ms a call, seen before
	x := 24 / 0.002e9 // the dependency serves 24 at once: 24 workers do what 32 do
	checkFrom32(c, 24, x)
	stepOf(c, busyTick(24, x)) // one tick before the drop
	slow := 8 / 0.002e9        // then the dependency serves 8
	n, _, _ := stepOf(c, busyTick(24, slow))
	if n != 24 {
		t.Fatalf("count %d after one slow tick, want 24: one tick may be a stall", n)
	}
	n, reason, _ := stepOf(c, busyTick(24, slow))
	// 24 × the time per call before (32 calls queueing at 24) over the
	// time now (24 at 8): 11.
	if n != 11 || reason != Latency {
		t.Fatalf("count %d (%q) after two slow ticks under a check, want 11 (%q)", n, reason, Latency)
	}
	for range 4 {
		stepOf(c, busyTick(c.n, slow))
	}
	if c.n != 8 {
		t.Fatalf("count %d four ticks later, want 8: what 8 calls at once need", c.n)
	}
}

// A doubling whose calls fail more than the count before goes back after
// one tick, whatever throughput did, to the count its throughput needs,
// and says why; one whose errors stay at the count before's is judged on
// throughput (here kept, and slow start goes on).
func TestControllerTakesBackAProbeUpWhoseCallsFail(t *testing.T) {
	for _, tc := range []struct {
		name       string
		fb, fa     float64 // errors per item before and after
		want       int
		wantReason Reason
	}{
		{"errors appear", 0, 0.5, 24, Failing},
		{"errors double and more", 0.05, 0.2, 24, Failing},
		{"errors as before", 0.1, 0.1, 64, Grow},
		{"a few more, not twice", 0.1, 0.15, 64, Grow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(1, 256, 16, std)
			c.noise, c.varied = 0.01*0.01, 100
			x := 16 / 0.002e9
			before := make([]tick, 5)
			for i := range before {
				before[i] = tick{x: x, t: 16 / x, f: tc.fb}
			}
			c.cur = before
			c.start(32, double, before, Grow, "")
			s := busyTick(32, 1.5*x) // on throughput alone, kept
			s.Errors = int64(tc.fa * float64(s.Items))
			n, r, why := stepOf(c, s)
			if n != tc.want || r != tc.wantReason {
				t.Errorf("count %d (%v: %s), want %d (%v)", n, r, why, tc.want, tc.wantReason)
			}
		})
	}
}

// From a start above the least count, a doubling left unclear goes back
// while no probe has shown the count to pay: the descent that follows
// would take its workers anyway.
func TestControllerTakesBackAnUnclearDoublingFromAnUnprovenStart(t *testing.T) {
	for _, tc := range []struct {
		grew bool
		want int
	}{{false, 16}, {true, 64}} {
		c := New(1, 256, 16, std)
		c.noise, c.varied, c.grew = 0.2*0.2, 100, tc.grew
		c.cur = []tick{{x: 0.01, t: 1600}, {x: 0.01, t: 1600}}
		stepOf(c, busyTick(16, 0.01))
		for range std.MaxJudge {
			stepOf(c, busyTick(32, 0.01))
		}
		if c.n != tc.want {
			t.Errorf("grew %v: count %d after an unclear doubling from 16, want %d", tc.grew, c.n, tc.want)
		}
	}
}
