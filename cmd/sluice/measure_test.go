package main

import (
	"strings"
	"testing"
	"time"
)

// A run's rate is printed at a precision that suits its size: the demo's
// tens of thousands of events per second must not show as "0.0e6".
func TestFiguresStringScalesTheRate(t *testing.T) {
	for _, c := range []struct {
		n    int
		wall time.Duration
		want string
	}{
		{200_000, 5 * time.Second, "values/s 40.0k "},
		{50_000_000, 2 * time.Second, "values/s 25.00M "},
		{300, time.Second, "values/s 300 "},
	} {
		got := figures{N: c.n, Wall: c.wall, User: time.Second}.String()
		if !strings.Contains(got, c.want) {
			t.Errorf("figures{N: %d, Wall: %v}.String() = %q, want it to contain %q", c.n, c.wall, got, c.want)
		}
	}
}

// Quantiles of the demo's latencies are interpolated within 1/16 and never
// above the largest latency seen.
func TestLatencyQuantilesAreWithinASixteenthAndAtMostTheMax(t *testing.T) {
	var l latencies
	for i := 1; i <= 1000; i++ {
		l.add(time.Duration(i) * time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.99, 990 * time.Millisecond}} {
		if got := l.q(c.q); got < c.want*15/16 || got > c.want*17/16 {
			t.Errorf("q(%v) = %v; want within 1/16 of %v", c.q, got, c.want)
		}
	}
	if got := l.q(1); got > l.max || l.max != time.Second {
		t.Errorf("q(1) = %v, max %v; want at most the max, 1s", got, l.max)
	}
	// A latency near the top of its bucket: interpolation alone would
	// answer above it.
	top := time.Duration(1<<33 - 1000)
	var one latencies
	for range 100 {
		one.add(top)
	}
	if got := one.q(0.999); got > top || got < top*15/16 {
		t.Errorf("100 latencies of %v: q(0.999) = %v; want at most %[1]v and within 1/16", top, got)
	}
}
