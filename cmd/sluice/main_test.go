package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The compare mode runs this test binary as its child: act as the
	// CLI when asked to.
	if os.Getenv("SLUICE_CLI_CHILD") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestExpectedSumMatchesADirectLoop(t *testing.T) {
	nums := numbers(37)
	for _, n := range []int{1, 36, 37, 38, 1000} {
		want, j := 0, 0
		for range n {
			want += nums[j] * nums[j]
			if j++; j == len(nums) {
				j = 0
			}
		}
		if got := expectedSum(nums, n); got != want {
			t.Fatalf("n=%d: got %d, want %d", n, got, want)
		}
	}
}

func TestEveryImplementationComputesTheExpectedSum(t *testing.T) {
	nums := numbers(1024)
	for _, w := range []int{1, 3, 8} {
		want := expectedSum(nums, 100_003)
		if got := squaresNaive(100_003, w, 16, nums); got != want {
			t.Fatalf("naive w=%d: got %d, want %d", w, got, want)
		}
		if got := squaresHand(100_003, w, nums); got != want {
			t.Fatalf("hand w=%d: got %d, want %d", w, got, want)
		}
		got, err := squaresSluice(context.Background(), 100_003, w, nums, nil)
		if err != nil || got != want {
			t.Fatalf("sluice w=%d: got %d, %v; want %d", w, got, err, want)
		}
	}
}

func TestSquaresAlonePrintsFinalSumAndFigures(t *testing.T) {
	for _, impl := range []string{"naive", "sluice", "hand"} {
		code, out, errOut := runCLI(t, "squares", "-impl", impl, "-n", "50000", "-w", "2")
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", impl, code, errOut)
		}
		want := "Final Sum: " + strconv.Itoa(expectedSum(numbers(1024), 50000))
		if !strings.Contains(out, want) || !strings.Contains(out, "values/s") || !strings.Contains(out, "max RSS") {
			t.Fatalf("%s: got %q, want %q and the figures", impl, out, want)
		}
	}
}

func TestSquaresCompareRunsBothAsProcesses(t *testing.T) {
	t.Setenv("SLUICE_CLI_CHILD", "1")
	code, out, errOut := runCLI(t, "squares", "-n", "200000", "-count", "2")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"naive", "sluice", "hand", "conditions:", "sluice vs naive: values/s ×", "sluice reaches"} {
		if !strings.Contains(out, want) {
			t.Fatalf("got %q, want it to contain %q", out, want)
		}
	}
}

func TestBadFlagsAreRejected(t *testing.T) {
	for _, args := range [][]string{
		{"squares", "-n", "0"},
		{"squares", "-w", "-1"},
		{"squares", "-impl", "rust"},
		{"squares", "extra"},
		{"nosuch"},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != 2 || errOut == "" {
			t.Fatalf("%v: got exit %d, stderr %q; want exit 2 and a message", args, code, errOut)
		}
	}
}

// squaresSluice's generator must get Emitter.Send inlined: the Emitter's
// design (no call in Send, a flusher goroutine for full chunks) exists for
// it, and a change to Send that pushes it over the inliner's budget would
// cost a call per item without failing anything else.
func TestEmitterSendIsInlinedIntoTheGenerator(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to check inlining: %v", err)
	}
	out, err := exec.Command(goCmd, "build", "-gcflags=-m", "-o", os.DevNull, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	const want = "inlining call to sluice.(*Emitter[go.shape.int]).Send"
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "squares.go") && strings.Contains(line, want) {
			return
		}
	}
	t.Fatalf("the compiler did not inline Emitter.Send into squares.go's generator; want a line %q", want)
}
