package main

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/cmd/sluice/internal/bench"
)

// `sluice bench --check` runs every experiment's every variant at tiny
// sizes, each checking its answer, the seed 002 programs as processes
// (Rust too where cargo is installed). No row may be FAILED, and rows may
// be skipped only for the documented reasons.
func TestBenchCheckEveryVariantOfEveryExperiment(t *testing.T) {
	t.Setenv("SLUICE_CLI_CHILD", "1")
	code, out, errOut := runCLI(t, "bench", "--check", "--format", "json")
	if code != 0 {
		t.Errorf("exit %d; stderr:\n%s", code, errOut)
	}
	_, cargoErr := exec.LookPath("cargo")
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r bench.Row
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		seen[r.Experiment]++
		switch {
		case r.Status == "FAILED":
			t.Errorf("%s / %s / %s FAILED: %s", r.Experiment, r.Group, r.Variant, r.Note)
		case r.Status == "skipped" && strings.HasPrefix(r.Variant, "Rust") && cargoErr == nil:
			t.Errorf("%s skipped although cargo is installed: %s", r.Variant, r.Note)
		case r.Status == "skipped" && !(strings.HasPrefix(r.Variant, "Rust") || strings.HasPrefix(r.Note, "above ") || strings.HasPrefix(r.Note, "too large for") ||
			strings.HasPrefix(r.Note, "a bounded channel") || strings.HasPrefix(r.Note, "sequential only")):
			t.Errorf("%s / %s / %s skipped: %s", r.Experiment, r.Group, r.Variant, r.Note)
		}
	}
	for _, name := range []string{"fanin", "elastic", "squares", "sum", "csv", "pipeline", "ring"} {
		if seen[name] == 0 {
			t.Errorf("no rows for %s", name)
		}
	}
}

func TestBenchChildRunsSluicesOwnSquares(t *testing.T) {
	for _, impl := range []string{"naive", "sluice", "rill", "conc"} {
		code, out, errOut := runCLI(t, "bench", "-child", "squares-"+impl, "-n", "10007", "-w", "2")
		want := "Final Sum: " + strconv.Itoa(expectedSum(numbers(1024), 10007))
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("%s: exit %d, out %q, stderr %q; want %q", impl, code, out, errOut, want)
		}
	}
}
