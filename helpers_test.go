package sluice_test

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func ints(n int) []int {
	xs := make([]int, n)
	for i := range xs {
		xs[i] = i
	}
	return xs
}

func double(_ context.Context, v int) (int, error) { return 2 * v, nil }

// checkExactlyOnce fails unless got holds each of want exactly once, in any
// order.
func checkExactlyOnce(t *testing.T, got, want []int) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("got %d items (sorted head %v), want %d items (sorted head %v)", len(g), head(g), len(w), head(w))
	}
}

func head(xs []int) []int { return xs[:min(len(xs), 10)] }

// mustPanic runs f and returns its panic message, failing if f does not
// panic or the message lacks any of the given parts.
func mustPanic(t *testing.T, f func(), parts ...string) {
	t.Helper()
	var msg string
	func() {
		defer func() {
			r := recover()
			if r == nil {
				t.Fatalf("got no panic, want one mentioning %q", parts)
			}
			msg, _ = r.(string)
		}()
		f()
	}()
	for _, part := range parts {
		if !strings.Contains(msg, part) {
			t.Fatalf("got panic %q, want it to mention %q", msg, part)
		}
	}
}

// exitGoroutine ends the calling goroutine, as t.FailNow does.
func exitGoroutine() { runtime.Goexit() }
