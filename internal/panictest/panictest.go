// Package panictest checks programmer-error panics in tests: that f
// panics, with a string message that starts with the package's prefix and
// names the bad value.
package panictest

import (
	"fmt"
	"strings"
	"testing"
)

// Expect calls f and fails t unless f panics with a string that starts
// with prefix (the package, "ring: ") and contains every one of parts (the
// bad value and what it was given to).
func Expect(t testing.TB, prefix string, f func(), parts ...string) {
	t.Helper()
	msg, ok := recovered(f)
	if !ok {
		t.Errorf("no panic; want one starting %q and naming %q", prefix, parts)
		return
	}
	if !strings.HasPrefix(msg, prefix) {
		t.Errorf("panic %q does not start with %q", msg, prefix)
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("panic %q does not name %q", msg, p)
		}
	}
}

// recovered runs f and returns its panic's message, and whether it panicked.
func recovered(f func()) (msg string, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			msg, panicked = fmt.Sprint(r), true
		}
	}()
	f()
	return "", false
}
