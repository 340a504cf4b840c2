package machine

import (
	"os"
	"strings"
	"testing"
)

func TestCPUModelNamesTheCPUOfCpuinfo(t *testing.T) {
	got := CPUModel()
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		if got != "unknown CPU" {
			t.Fatalf("no /proc/cpuinfo, CPUModel() = %q; want \"unknown CPU\"", got)
		}
		return
	}
	if got == "" || (got != "unknown CPU" && !strings.Contains(string(data), got)) {
		t.Fatalf("CPUModel() = %q, not a model name of /proc/cpuinfo", got)
	}
}
