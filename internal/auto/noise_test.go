package auto

import (
	"math"
	"testing"
)

// The noise is the variance of ln throughput from one tick to the next:
// ticks that alternate by a factor e^±d give d²/2 per pair, as their
// first few estimate it and the moving average after holds it; a jump far beyond it counts as a few standard
// deviations only.
func TestVaryEstimatesTheNoiseAndClampsAJump(t *testing.T) {
	c := New(1, 8, 1, std)
	a, b := tick{x: 1}, tick{x: math.Exp(0.1)}
	for range 50 {
		c.vary(a, b)
	}
	if got, want := c.noise, 0.1*0.1/2; math.Abs(got-want) > 0.01*want {
		t.Fatalf("noise %v after steady pairs, want %v", got, want)
	}
	before := c.noise
	c.vary(tick{x: 1}, tick{x: 100}) // a dependency that changed: news, not noise
	if c.noise > before*(1+std.NoiseWeight*std.NoiseClamp) {
		t.Fatalf("noise %v after a jump from %v, want it clamped to %v at most", c.noise, before, before*(1+std.NoiseWeight*std.NoiseClamp))
	}
}

// keep holds the last KeepTicks ticks, and once full, compares the
// means of their halves into the drift; sigma2 takes the larger of the
// two, and never less than MinNoise.
func TestKeepHoldsTheLastTicksAndTheDrift(t *testing.T) {
	c := New(1, 8, 1, std)
	for i := range 3 * std.KeepTicks {
		x := 1.0
		if i%std.KeepTicks >= std.KeepTicks/2 {
			x = 1.2 // the second half of each window 20 % up
		}
		c.keep(tick{x: x, t: float64(i)}, true)
	}
	if len(c.cur) != std.KeepTicks || c.cur[len(c.cur)-1].t != float64(3*std.KeepTicks-1) {
		t.Fatalf("kept %d ticks ending with %v, want the last %d", len(c.cur), c.cur[len(c.cur)-1], std.KeepTicks)
	}
	if c.drift <= 0 {
		t.Fatalf("drift %v after windows whose halves differ, want > 0", c.drift)
	}
	c.noise, c.drift = 0, 0
	if c.sigma2() != std.MinNoise {
		t.Fatalf("sigma2 %v with no noise, want MinNoise %v", c.sigma2(), std.MinNoise)
	}
}
