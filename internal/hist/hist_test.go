package hist

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBucketsCoverEveryValueInOrder(t *testing.T) {
	for b := range Buckets {
		lo, hi := Lower(b), Upper(b)
		if lo >= hi || Bucket(lo) != b || Bucket(hi-1) != b {
			t.Fatalf("bucket %d: [%d, %d) maps to %d and %d", b, lo, hi, Bucket(lo), Bucket(hi-1))
		}
		if b > 0 && Upper(b-1) != lo {
			t.Fatalf("bucket %d starts at %d, bucket %d ends at %d", b, lo, b-1, Upper(b-1))
		}
		if width := hi - lo; lo >= Sub && float64(width) > float64(lo)/Sub {
			t.Fatalf("bucket %d is %d wide at %d: more than 1/%d", b, width, lo, Sub)
		}
	}
}

// exact is the value of rank ⌈q·n⌉ of sorted xs.
func exact(sorted []uint64, q float64) float64 {
	r := max(int(math.Ceil(q*float64(len(sorted)))), 1)
	return float64(sorted[r-1])
}

// Over random distributions, every quantile is within the stated bound of
// the exact one from a sort: 1/16 of the value, or 1 below 16.
func TestQuantileIsWithinASixteenthOfTheExactValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dists := map[string]func() uint64{
		"uniform 0–1e6":   func() uint64 { return rng.Uint64N(1_000_000) },
		"exponential 1ms": func() uint64 { return uint64(rng.ExpFloat64() * 1e6) },
		"lognormal":       func() uint64 { return uint64(math.Exp(rng.NormFloat64()*2 + 10)) },
		"small ints":      func() uint64 { return rng.Uint64N(40) },
		"bimodal":         func() uint64 { return []uint64{1_000, 5_000_000}[rng.IntN(2)] + rng.Uint64N(100) },
		"wide":            func() uint64 { return rng.Uint64() >> 1 >> rng.IntN(63) },
	}
	for name, draw := range dists {
		for _, n := range []int{1, 7, 100, 10_000} {
			var c Counts
			xs := make([]uint64, n)
			for i := range xs {
				xs[i] = draw()
				c.Add(xs[i])
			}
			slices.Sort(xs)
			for _, q := range []float64{0.001, 0.1, 0.25, 0.5, 0.9, 0.99, 0.999, 1} {
				got, want := c.Quantile(q), exact(xs, q)
				if bound := max(want/Sub, 1); math.Abs(got-want) > bound {
					t.Errorf("%s, n=%d, q=%v: got %.1f, exact %.0f (off by %.2f %%, bound %.1f)", name, n, q, got, want, 100*math.Abs(got-want)/want, bound)
				}
			}
		}
	}
}

func TestQuantileEdges(t *testing.T) {
	one := func(v uint64) *Counts {
		var c Counts
		c.Add(v)
		return &c
	}
	for _, tc := range []struct {
		name   string
		c      *Counts
		q      float64
		lo, hi float64
	}{
		{"empty", &Counts{}, 0.5, 0, 0},
		{"zero", one(0), 0.5, 0, 0},
		{"one value 7", one(7), 0.99, 7, 7},
		{"one value 1e9", one(1e9), 0.5, 1e9 * 15 / 16, 1e9 * 17 / 16},
		{"huge", one(math.MaxUint64), 1, Max * 15 / 16, Max},
		{"max", one(Max), 0.01, Max * 15 / 16, Max},
		{"q above 1", one(100), 3, 100 * 15 / 16, 100 * 17 / 16},
		{"q 0", one(100), 0, 100 * 15 / 16, 100 * 17 / 16},
	} {
		if got := tc.c.Quantile(tc.q); got < tc.lo || got > tc.hi {
			t.Errorf("%s: Quantile(%v) = %v, want in [%v, %v]", tc.name, tc.q, got, tc.lo, tc.hi)
		}
	}
}

func TestRecorderSnapshotsAndMergeAddUp(t *testing.T) {
	var r Recorder
	var want Counts
	done := make(chan struct{})
	go func() { // a concurrent reader, as stats snapshots are
		defer close(done)
		for range 100 {
			var c Counts
			r.AddTo(&c)
		}
	}()
	for v := range uint64(10_000) {
		r.Record(v * 37)
		want.Add(v * 37)
	}
	<-done
	var got Counts
	r.AddTo(&got)
	if got != want {
		t.Fatalf("recorder counted %d values summing %d, want %d summing %d", got.Count, got.Sum, want.Count, want.Sum)
	}
	got.Merge(&want)
	var twice Counts
	for v := range uint64(10_000) {
		twice.Add(v * 37)
		twice.Add(v * 37)
	}
	if got != twice {
		t.Fatalf("merged: count %d, sum %d; want %d, %d", got.Count, got.Sum, twice.Count, twice.Sum)
	}
}

func TestQuantileOfBoundsWithAnOpenLastBucketAnswersItsLowerBound(t *testing.T) {
	bounds := func(b int) (float64, float64) {
		if b == 1 {
			return 10, math.Inf(1)
		}
		return 0, 9
	}
	if got := Quantile([]uint64{1, 3}, 0.9, bounds); got != 10 {
		t.Fatalf("got %v, want 10", got)
	}
	if got := Quantile([]uint64{2, 0}, 0.5, bounds); got != 2.25 {
		t.Fatalf("got %v, want 2.25 (the first of two values spread over 0–9)", got)
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := Median(tc.xs); got != tc.want {
			t.Errorf("Median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
}
