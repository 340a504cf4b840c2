package auto

import (
	"testing"
	"time"
)

func TestSampleAddsUpAndSaysWhenItIsEnough(t *testing.T) {
	var s Sample
	s.Add(Sample{Elapsed: time.Second, Items: 3, Errors: 1, Busy: time.Second, Idle: time.Second, Throttled: 0}, 4)
	s.Add(Sample{Elapsed: time.Second, Items: 3, Errors: 2, Busy: 3 * time.Second, Idle: 0, Throttled: time.Second}, 5)
	want := Sample{Elapsed: 2 * time.Second, Items: 6, Errors: 3, Busy: 4 * time.Second, Idle: time.Second, Throttled: time.Second, Workers: 5}
	if s != want {
		t.Fatalf("got %+v, want %+v", s, want)
	}
	for _, tc := range []struct {
		s    Sample
		want bool
	}{
		{Sample{Elapsed: autoTick, Items: 8, Busy: autoTick, Workers: 1}, true},           // enough items
		{Sample{Elapsed: autoTick, Items: 8, Busy: 16 * autoTick, Workers: 16}, false},    // fewer than one a worker
		{Sample{Elapsed: autoTick, Items: 1, Busy: autoTick, Idle: autoTick}, true},       // mostly waiting
		{Sample{Elapsed: std.MaxSample, Items: 1, Busy: std.MaxSample, Workers: 1}, true}, // long enough
		{Sample{Elapsed: autoTick, Items: 1, Busy: autoTick, Workers: 1}, false},
	} {
		if got := tc.s.Enough(std); got != tc.want {
			t.Errorf("%+v: enough %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestTickOfASample(t *testing.T) {
	tk, util, th := tickOf(Sample{Elapsed: time.Second, Items: 100, Errors: 25, Busy: 2 * time.Second, Idle: time.Second, Throttled: time.Second, Workers: 4})
	if tk.x != 100/1e9 || tk.t != 2e9/100 || tk.f != 0.25 || tk.errs != 25 || util != 0.5 || th != 0.25 {
		t.Fatalf("tick %+v, busy %v, throttled %v; want 1e-7 items/ns, 2e7 ns an item, 0.25 errors an item, busy 0.5, throttled 0.25", tk, util, th)
	}
}

// From three ticks on, a mean is the median of each figure: a stalled
// tick does not move it.
func TestMeanIsTheMedianFromThreeTicks(t *testing.T) {
	two := mean([]tick{{x: 1, t: 2, f: 0}, {x: 3, t: 4, f: 1}})
	if two != (tick{x: 2, t: 3, f: 0.5}) {
		t.Errorf("mean of two %+v, want their means", two)
	}
	three := mean([]tick{{x: 1, t: 9, f: 0}, {x: 100, t: 1, f: 5}, {x: 2, t: 2, f: 0.1}})
	if three != (tick{x: 2, t: 2, f: 0.1}) {
		t.Errorf("mean of three %+v, want their medians", three)
	}
	if n := errSum([]tick{{errs: 2}, {errs: 3}}); n != 5 {
		t.Errorf("errors %d, want 5", n)
	}
}
