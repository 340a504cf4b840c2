package par_test

import (
	"runtime"
	"testing"
)

// withProcs runs the rest of the test with GOMAXPROCS set to n, so that the
// parallel paths run even on a one-CPU machine.
func withProcs(t *testing.T, n int) {
	t.Helper()
	old := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// ints returns n pseudo-random ints in [-1000, 1000), the same for the
// same n.
func ints(n int) []int {
	xs := make([]int, n)
	x := uint64(n) | 1
	for i := range xs {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		xs[i] = int(x%2000) - 1000
	}
	return xs
}

// spin burns about d nanoseconds of CPU without sleeping, so that a test
// can make f dear enough for the adaptive split to start helpers.
func spin(d int) int {
	x := 1
	for i := range d {
		x = x*31 + i
	}
	return x
}

// recovered runs f and returns what it panicked with, or nil.
func recovered(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}
