// Package hist counts durations at the resolution of a pipeline's own
// latency histograms: 16 buckets per power of two, so that a quantile,
// interpolated inside its bucket, is within 1/16 of the true value. It
// answers through sluice.Histogram, the core's public histogram type.
package hist

import (
	"slices"
	"time"

	"github.com/sluicehq/sluice"
)

// bounds[i] is the largest value bucket i counts: 0 to 15 one each, then
// 16 buckets of equal width per power of two; the last bucket has no upper
// bound (0, as in sluice.Histogram).
var bounds = func() []time.Duration {
	b := make([]time.Duration, 0, buckets)
	for v := range 16 {
		b = append(b, time.Duration(v))
	}
	for e := 4; e < 63; e++ {
		width := uint64(1) << (e - 4)
		for s := uint64(1); s <= 16; s++ {
			b = append(b, time.Duration(1<<e+s*width-1))
		}
	}
	b[len(b)-1] = 0
	return b
}()

const buckets = 16 + (63-4)*16

// Counts is a histogram of durations in nanoseconds. The zero value is
// empty and ready; copying it copies the counts. Not safe for concurrent
// use.
type Counts struct {
	n [buckets]uint64
}

// Add counts v nanoseconds.
func (c *Counts) Add(v uint64) {
	d := time.Duration(min(v, 1<<63-1))
	i, _ := slices.BinarySearch(bounds[:buckets-1], d) // the first bucket whose bound is ≥ d
	c.n[i]++
}

// Quantile estimates the q-quantile (0 < q ≤ 1) of the values counted, in
// nanoseconds: within 1/16 of the true value. It returns 0 when empty.
func (c *Counts) Quantile(q float64) float64 {
	return float64(sluice.Histogram{Bounds: bounds, Counts: c.n[:]}.Quantile(q))
}
