package hist

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every bucket's bound is above the one before, and 16 buckets cover each
// power of two from 16 ns up: the resolution of a pipeline's histograms.
func TestBoundsRiseWithSixteenBucketsPerPowerOfTwo(t *testing.T) {
	for i := 1; i < buckets-1; i++ {
		if bounds[i] <= bounds[i-1] {
			t.Fatalf("bounds[%d] = %d, not above bounds[%d] = %d", i, bounds[i], i-1, bounds[i-1])
		}
	}
	for e := 4; e < 62; e++ {
		if got, want := bounds[16*(e-3)-1], time.Duration(1)<<e-1; got != want {
			t.Errorf("bound of the bucket below 2^%d: got %d, want %d", e, got, want)
		}
	}
}

// A quantile is within 1/16 of the value at its rank, for values from a
// nanosecond to minutes.
func TestQuantilesAreWithinASixteenth(t *testing.T) {
	for _, unit := range []time.Duration{1, time.Microsecond, time.Millisecond, time.Second} {
		var c Counts
		for i := 1; i <= 1000; i++ {
			c.Add(uint64(time.Duration(i) * unit))
		}
		for _, q := range []float64{0.01, 0.5, 0.99, 1} {
			want := float64(time.Duration(q*1000) * unit)
			if got := c.Quantile(q); got < want*15/16 || got > want*17/16 {
				t.Errorf("1…1000 × %v: Quantile(%v) = %v, want within 1/16 of %v", unit, q, time.Duration(got), time.Duration(want))
			}
		}
	}
	var empty Counts
	if got := empty.Quantile(0.5); got != 0 {
		t.Errorf("empty: Quantile(0.5) = %v, want 0", got)
	}
}

// bucket finds, from the bits, the bucket that a search of the bounds
// finds: the first whose bound is ≥ the value.
func TestBucketIsTheFirstWhoseBoundIsAtLeastTheValue(t *testing.T) {
	search := func(v uint64) int {
		i, _ := slices.BinarySearch(bounds[:buckets-1], time.Duration(min(v, 1<<63-1)))
		return i
	}
	check := func(v uint64) {
		if got, want := bucket(v), search(v); got != want {
			t.Fatalf("bucket(%d) = %d, want %d", v, got, want)
		}
	}
	for v := range uint64(1 << 16) {
		check(v)
	}
	for e := 4; e < 64; e++ {
		for _, d := range []uint64{0, 1, 2} {
			check(1<<e - d)
			check(1<<e + d)
		}
	}
	check(1<<64 - 1)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		check(rng.Uint64() >> rng.IntN(64))
	}
}
