package auto

import (
	"slices"
	"testing"
	"time"
)

// A dependency that serves 32 calls at once (27.5 ms each on average)
// and refuses the rest at once: every probe above 32 is undone at its
// first failed call, before a tick; after the first, no doubling reaches
// the count that failed, steps towards it shrink, and they come ever
// more rarely.
func TestControllerUndoesAProbeUpAtItsFirstFailedCall(t *testing.T) {
	for _, start := range []int{32, 4} {
		c := New(1, 64, start, std)
		var counts, tried []int
		for range 600 { // a minute
			n := c.n
			stepOf(c, busyTick(n, float64(min(n, 32))/27.5e6))
			if c.n > 32 {
				if !c.Watching() {
					t.Fatalf("from %d: a probe to %d not watched", start, c.n)
				}
				tried = append(tried, c.n)
				if d := c.Refused(Sample{Elapsed: time.Millisecond, Items: 1, Errors: 1, Workers: c.n}); d.Reason != Failing || d.Count > 32 {
					t.Fatalf("from %d: a failed call during a probe to %d: got %+v, want back to 32 at most, failing", start, tried[len(tried)-1], d)
				}
			}
			counts = append(counts, c.n)
		}
		if len(tried) == 0 || tried[0] != 64 || slices.Max(tried[1:]) > 34 || len(tried) > 7 {
			t.Errorf("from %d: probes above 32 to %v: want the first a doubling to 64, then steps of 2 at most, at most 7 in a minute", start, tried)
		}
		if tail := counts[len(counts)/2:]; slices.Min(tail) < 31 {
			t.Errorf("from %d: counts in the last 30 s range over %d–%d, want 31–32", start, slices.Min(tail), slices.Max(tail))
		}
		t.Logf("from %d: probes above 32: %v", start, tried)
	}
}

// From a count whose calls fail now and then, a probe up is undone only
// once its calls fail more, not at one failed call.
func TestControllerKeepsAProbeWhoseFailuresAreTheCountsBefore(t *testing.T) {
	c := New(1, 64, 8, std)
	x := 8 / 2e6
	for range 3 {
		s := busyTick(8, x)
		s.Errors = s.Items / 200 // under FailShare: the count does not fail
		stepOf(c, s)
		if c.n != 8 {
			break
		}
	}
	if c.n != 16 || !c.Watching() {
		t.Fatalf("count %d, watching %v: want a doubling to 16 under way", c.n, c.Watching())
	}
	if d := c.Refused(Sample{Elapsed: time.Millisecond, Items: 8, Errors: 1, Workers: 16}); d.Reason != None || c.n != 16 {
		t.Fatalf("one failed call in 8 from a count failing one in 200: got %+v, want the probe to go on", d)
	}
	if d := c.Refused(Sample{Elapsed: 10 * time.Millisecond, Items: 80, Errors: 20, Workers: 16}); d.Reason != Failing || d.Count != 8 {
		t.Fatalf("20 failed calls in 80: got %+v, want back to 8, failing", d)
	}
}
