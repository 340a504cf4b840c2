package lab

import (
	"math"
	"testing"
	"time"
)

// Latency quantiles are within 1/16 of the value at their rank, as a
// pipeline's own histograms are.
func TestLatencyQuantilesAreWithinASixteenth(t *testing.T) {
	l := newLatencies()
	for i := 1; i <= 1000; i++ {
		l.Add(time.Duration(i) * time.Microsecond)
	}
	for _, q := range []float64{0.5, 0.99} {
		want := time.Duration(q*1000) * time.Microsecond
		if got := l.Quantile(q); got < want*15/16 || got > want*17/16 {
			t.Errorf("Quantile(%v) = %v, want within 1/16 of %v", q, got, want)
		}
	}
}

func TestMedianIsTheMiddleOrTheMeanOfTheMiddleTwo(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1, 3, 2}, 2.5}, {[]float64{7}, 7}} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median(nil) = %v, want NaN", got)
	}
}
