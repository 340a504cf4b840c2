package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
)

func explodeAt42(_ context.Context, v int) (int, error) {
	if v == 42 {
		panic("kaboom")
	}
	return v, nil
}

// TestPanicErrorIsOneLineWithItsValueAndWhere checks that a panic's error
// reads on one line — the value and the function, file and line that
// panicked — and that %+v adds the stack.
func TestPanicErrorIsOneLineWithItsValueAndWhere(t *testing.T) {
	p := sluice.New(context.Background())
	m := sluice.Map(p, "explode", sluice.FromSlice(p, "src", ints(100)), 1, explodeAt42)
	sluice.ForEach(p, "sink", m, 1, func(context.Context, int) error { return nil })
	err := p.Wait()
	var pe *sluice.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a *PanicError", err)
	}
	line := err.Error()
	if strings.Contains(line, "\n") {
		t.Fatalf("got a %d-line Error(), want one line: %q", strings.Count(line, "\n")+1, line)
	}
	for _, want := range []string{`stage "explode"`, "kaboom", "explodeAt42", "errors_test.go:"} {
		if !strings.Contains(line, want) {
			t.Fatalf("got %q, want it to mention %q", line, want)
		}
	}
	full := fmt.Sprintf("%+v", pe)
	if !strings.HasPrefix(full, line+"\n") || !strings.Contains(full, "goroutine") {
		t.Fatalf("got %%+v %.300q…, want the line and then the stack", full)
	}
	if got := fmt.Sprintf("%v", pe); got != line {
		t.Fatalf("got %%v %q, want %q", got, line)
	}
}

// TestARuntimePanicSaysWhereItHappened checks a nil dereference names the
// user's function, not the runtime's.
func TestARuntimePanicSaysWhereItHappened(t *testing.T) {
	p := sluice.New(context.Background())
	var nilMap *map[int]int
	sluice.ForEach(p, "deref", sluice.FromSlice(p, "src", ints(3)), 1, func(_ context.Context, v int) error {
		(*nilMap)[v] = v
		return nil
	})
	err := p.Wait()
	if msg := err.Error(); !strings.Contains(msg, "errors_test.go:") || strings.Contains(msg, "\n") {
		t.Fatalf("got %q, want one line naming errors_test.go", msg)
	}
}
