// Package machine describes the machine a measurement runs on, for the
// conditions line of the benchmark lab's reports.
package machine

import (
	"bufio"
	"os"
	"strings"
)

// CPUModel names the CPU from /proc/cpuinfo's first "model name" line, or
// returns "unknown CPU" where there is none (not Linux, no such line).
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
