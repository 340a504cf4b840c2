package sluice

import (
	"errors"
	"fmt"
)

// StageError is the error a stage's function returned, with the stage's name.
type StageError struct {
	Stage string
	Err   error
}

func (e *StageError) Error() string { return fmt.Sprintf("sluice: stage %q: %v", e.Stage, e.Err) }

// Unwrap returns the function's error, so errors.Is and errors.As see it.
func (e *StageError) Unwrap() error { return e.Err }

// PanicError is a panic recovered in a stage, with the stack of the
// goroutine that panicked.
type PanicError struct {
	Stage string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("sluice: stage %q panicked: %v\n%s", e.Stage, e.Value, e.Stack)
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
