package sluice

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
)

// StageError is the error a stage's function returned, with the stage's name.
type StageError struct {
	Stage string
	Err   error
}

func (e *StageError) Error() string { return fmt.Sprintf("sluice: stage %q: %v", e.Stage, e.Err) }

// Unwrap returns the function's error, so errors.Is and errors.As see it.
func (e *StageError) Unwrap() error { return e.Err }

// PanicError is a panic recovered in a stage: its value, where it
// happened (the function, file and line that panicked) and the stack of
// the goroutine that panicked. Error is one line, the value and where;
// format it with %+v for the stack as well.
type PanicError struct {
	Stage string
	Value any
	At    string // "pkg.Func (file.go:12)" of the panicking call; "" if unknown
	Stack []byte
}

func (e *PanicError) Error() string {
	if e.At == "" {
		return fmt.Sprintf("sluice: stage %q panicked: %v", e.Stage, e.Value)
	}
	return fmt.Sprintf("sluice: stage %q panicked: %v, at %s", e.Stage, e.Value, e.At)
}

// Format writes Error's line for %v and %s, and the line followed by the
// stack for %+v.
func (e *PanicError) Format(f fmt.State, verb rune) {
	io.WriteString(f, e.Error())
	if verb == 'v' && f.Flag('+') && len(e.Stack) > 0 {
		io.WriteString(f, "\n")
		f.Write(e.Stack)
	}
}

// panicSite returns where the panic being recovered happened: the first
// frame below the runtime's panic machinery. Called from a deferred
// function, while the panicking frames are still on the stack.
func panicSite() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	inPanic := false
	for {
		fr, more := frames.Next()
		switch {
		case fr.Function == "runtime.gopanic":
			inPanic = true
		case inPanic && !strings.HasPrefix(fr.Function, "runtime."):
			return fmt.Sprintf("%s (%s:%d)", fr.Function, filepath.Base(fr.File), fr.Line)
		}
		if !more {
			return ""
		}
	}
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// ErrGoexit is the error (inside a [*StageError]) with which a pipeline
// fails when a stage function calls runtime.Goexit — as t.FailNow and
// t.Fatal do when called from a stage function in a test. The goroutine
// still exits, but the pipeline stops instead of waiting forever for it.
var ErrGoexit = errors.New("runtime.Goexit called in a stage function (t.FailNow or t.Fatal outside the test goroutine?)")

// errStopped is what a stage body returns when it noticed that the pipeline
// is stopping; the engine replaces it with the stop's cause.
var errStopped = errors.New("sluice: stopped")
