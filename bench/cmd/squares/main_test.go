package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/bench/internal/lab"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The comparison builds the three programs, runs each as a process, checks
// their sums and prints one row each and sluice's ratios with the targets.
func TestSquaresComparesTheThreeProgramsAsProcesses(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := lab.SquaresMain([]string{"-n", "200000", "-count", "2"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errOut.String())
	}
	for _, want := range []string{"\nnaive ", "\nsluice ", "\nhand ", "sluice / naive: values/s ×", "max RSS ×"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSquaresBadFlagsExitTwo(t *testing.T) {
	for _, args := range [][]string{{"-n", "0"}, {"-w", "-1"}, {"-count", "0"}, {"extra"}} {
		var out, errOut bytes.Buffer
		if code := lab.SquaresMain(args, &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
