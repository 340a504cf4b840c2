package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The generator must get Emitter.Send inlined: the Emitter's design (no
// call in Send, a flusher goroutine for full chunks) exists for it, and a
// change to Send that pushes it over the inliner's budget would cost a call
// per item without failing anything else.
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
		if strings.Contains(line, "main.go") && strings.Contains(line, want) {
			return
		}
	}
	t.Fatalf("the compiler did not inline Emitter.Send into main.go's generator; want a line %q", want)
}
