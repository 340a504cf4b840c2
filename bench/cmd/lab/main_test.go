package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/bench/internal/lab"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// `lab --check` (what CI runs, through ./scripts/test) runs every
// experiment's every variant at tiny sizes, each checking its answer, seed
// 002's programs as processes (Rust too where cargo is installed). No row
// may be FAILED, and rows may be skipped only for the documented reasons.
func TestCheckEveryVariantOfEveryExperiment(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := lab.Main([]string{"--check", "--format", "json"}, &out, &errOut); code != 0 {
		t.Errorf("exit %d; stderr:\n%s", code, errOut.String())
	}
	_, cargoErr := exec.LookPath("cargo")
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r lab.Row
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
	for _, name := range []string{"fanin", "elastic", "squares", "sum", "csv", "pipeline", "ring", "windows"} {
		if seen[name] == 0 {
			t.Errorf("no rows for %s", name)
		}
	}
}
