package auto

import (
	"slices"
	"testing"
)

// After a shed to what a Throttle needs, the workers shed still held the
// limiter's next turns: the lone worker's first ticks do 35 items/s of
// the 100 the rate lets through (90 once they pass), waiting on the
// Throttle most of the time. The shed is kept: the count does not grow
// back into the Throttle.
func TestControllerDoesNotGrowBackIntoAThrottle(t *testing.T) {
	last, since := 16, 0
	d := func(n, _ int) (x, f, u float64) {
		if n != last {
			last, since = n, 0
		}
		since++
		x = min(100, float64(n)/0.011) // 1 ms calls, a turn every 10 ms
		if since <= 3 && n < 16 {
			x = 35
		}
		return x, 0, x * 0.001 / float64(n)
	}
	counts, reasons := drive(New(1, 16, 16, std), d, 100)
	if i := slices.Index(counts, 1); i < 0 || slices.Max(counts[i:]) > 1 {
		t.Fatalf("counts %v (reasons %v): want a shed to 1, never added back", counts, reasons)
	}
}

// A shrink of workers that wait on the Throttle, to fewer than the rate
// needs, is still taken back: the workers left are busy, and do less.
func TestControllerTakesBackAThrottleShrinkBelowTheRate(t *testing.T) {
	last, since := 16, 0
	d := func(n, _ int) (x, f, u float64) {
		if n != last {
			last, since = n, 0
		}
		since++
		x = min(100, float64(n)/0.02) // 20 ms calls: 2 workers do the rate
		if since <= 2 && n < 16 {
			x /= 3 // the first ticks after a shed
		}
		return x, 0, x * 0.02 / float64(n)
	}
	c := New(1, 16, 16, std)
	counts, _ := drive(c, d, 100)
	if tail := counts[30:]; slices.Min(tail) < 2 || slices.Max(tail) > 4 {
		t.Fatalf("counts %v: want 2–4 from 3 s on (100 calls a second of 20 ms need 2)", counts)
	}
}
