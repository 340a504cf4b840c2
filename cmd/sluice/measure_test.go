package main

import (
	"strings"
	"testing"
	"time"
)

// A measure counts this process's CPU time and its peak memory.
func TestMeasureCountsThisProcessCPUAndPeakMemory(t *testing.T) {
	m := startMeasure()
	for deadline := time.Now().Add(20 * time.Millisecond); time.Now().Before(deadline); {
	}
	f := m.stop()
	if f.CPU() <= 0 || f.Wall < 20*time.Millisecond || f.MaxRSS <= 0 {
		t.Errorf("after 20ms of spinning: %v; want CPU and max RSS above 0 and runtime at least 20ms", f)
	}
}

// The conditions line names the CPU of /proc/cpuinfo where there is one.
func TestMeasureConditionsNameTheCPU(t *testing.T) {
	got := conditions()
	want, ok := procField("/proc/cpuinfo", "model name")
	if !ok {
		want = "unknown CPU"
	}
	if !strings.HasPrefix(got, want+", ") {
		t.Errorf("conditions() = %q; want it to start with the CPU model %q", got, want)
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
