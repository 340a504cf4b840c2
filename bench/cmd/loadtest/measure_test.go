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
