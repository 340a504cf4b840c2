// Package hist counts durations at the resolution of a pipeline's own
// latency histograms: 16 buckets per power of two, so that a quantile,
// interpolated inside its bucket, is within 1/16 of the true value. It
// answers through sluice.Histogram, the core's public histogram type.
package hist

import (
	"math/bits"
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
func (c *Counts) Add(v uint64) { c.n[bucket(v)]++ }

// bucket returns the index of the first bucket whose bound is ≥ v (the
// last one for v ≥ 2^63), computed from v's bits rather than searched:
// 0 to 15 count themselves, and from 2^e up (e ≥ 4) 16 buckets of width
// 2^(e−4) follow each other.
func bucket(v uint64) int {
	if v < 16 {
		return int(v)
	}
	v = min(v, 1<<63-1)
	e := bits.Len64(v) - 1
	return 16 + (e-4)*16 + int((v-1<<e)>>(e-4))
}

// Quantile estimates the q-quantile (0 < q ≤ 1) of the values counted, in
// nanoseconds: within 1/16 of the true value. It returns 0 when empty.
func (c *Counts) Quantile(q float64) float64 {
	return float64(sluice.Histogram{Bounds: bounds, Counts: c.n[:]}.Quantile(q))
}
