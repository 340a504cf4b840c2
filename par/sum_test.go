package par_test

import (
	"math"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/seeds"
	"github.com/sluicehq/sluice/par"
)

// sumSizes straddle the kernel's step (16), the block size (16384) and the
// cut-off (524288).
var sumSizes = []int{0, 1, 15, 16, 17, 100, 16383, 16384, 16385, 524287, 524288, 524289, 1 << 20, 1<<20 + 3}

func TestSumMatchesSerialLoop(t *testing.T) {
	// ints(n) is a prefix of ints(m) for n ≤ m: one slice, and each
	// size's serial sum once for every GOMAXPROCS.
	all := ints(slices.Max(sumSizes))
	want := make([]int, len(sumSizes))
	for i, n := range sumSizes {
		want[i] = seeds.FindSum(all[:n])
	}
	for _, procs := range []int{1, 2, 4} {
		withProcs(t, procs)
		for i, n := range sumSizes {
			if got := par.Sum(all[:n]); got != want[i] {
				t.Errorf("GOMAXPROCS=%d n=%d: Sum = %d, want %d", procs, n, got, want[i])
			}
		}
	}
}

func TestSumIntegerOverflowWrapsLikeSerialLoop(t *testing.T) {
	withProcs(t, 4)
	xs := make([]int8, 300000)
	for i := range xs {
		xs[i] = int8(i*37 + 11)
	}
	var want int8
	for _, x := range xs {
		want += x
	}
	if got := par.Sum(xs); got != want {
		t.Errorf("Sum = %d, want %d", got, want)
	}
}

// TestSumFloatIsSameForAnyGOMAXPROCS: the order of float additions depends
// only on the input, never on the split.
func TestSumFloatIsSameForAnyGOMAXPROCS(t *testing.T) {
	xs := make([]float64, 1<<20+5)
	for i := range xs {
		xs[i] = 1 / float64(i+1)
	}
	sum := func(procs int) float64 {
		t.Helper()
		withProcs(t, procs)
		return par.Sum(xs)
	}
	want := sum(1)
	for _, procs := range []int{2, 3, 8} {
		for range 5 {
			if got := sum(procs); got != want {
				t.Fatalf("GOMAXPROCS=%d: Sum = %v, want %v (GOMAXPROCS=1)", procs, got, want)
			}
		}
	}
	// The harmonic sum to 2^20 is ~14.44; reordering may only touch the
	// last bits.
	var serial float64
	for _, x := range xs {
		serial += x
	}
	if got := sum(2); math.Abs(got-serial) > 1e-12*serial {
		t.Errorf("Sum = %v, want %v within 1e-12 relative", got, serial)
	}
}

func TestSumAcceptsEveryNumberType(t *testing.T) {
	type celsius float32
	check := func(name string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s: Sum = %v, want %v", name, got, want)
		}
	}
	check("int16", par.Sum([]int16{1, -2, 3}), int16(2))
	check("uint", par.Sum([]uint{1, 2, 3}), uint(6))
	check("uintptr", par.Sum([]uintptr{4, 5}), uintptr(9))
	check("float32", par.Sum([]float32{0.5, 0.25}), float32(0.75))
	check("named float32", par.Sum([]celsius{20, 1.5}), celsius(21.5))
	check("nil", par.Sum[int64](nil), int64(0))
}
