package sluice

import "errors"

// Failed is an item whose stage function failed, as a dead-letter stream
// carries it (see [DeadLetter]).
type Failed[T any] struct {
	Item     T      // the input the function failed on
	Err      error  // the last error the function returned; after retries, wrapped to say how many were made (see [Retry])
	Stage    string // the stage's name
	Attempts int    // calls made, retries included
}

// Permanent marks err as not worth retrying: a stage with [Retry] settles
// the item at once under its error policy. errors.Is and errors.As see
// through the mark. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// IsPermanent reports whether err was marked by [Permanent].
func IsPermanent(err error) bool {
	var pe *permanentError
	return errors.As(err, &pe)
}
