// Package hist is sluice's one histogram: log-linear buckets over
// non-negative integers (nanoseconds, mostly), exact below 16 and then 16
// buckets per power of two, so that a quantile, interpolated inside its
// bucket, is within 1/16 (6.25 %) of the true value and usually well under
// 1 %. Recorder is the single-writer, concurrent-reader form that pipeline
// workers keep; Counts is a plain snapshot that merges and answers
// quantiles. Median is the median of a few measurements.
package hist

import (
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
)

// subBits is log2 of the buckets per power of two.
const subBits = 4

// Sub is the number of buckets per power of two.
const Sub = 1 << subBits

// Max is the largest value a bucket tells apart; larger values are counted
// as Max.
const Max = math.MaxInt64

// Buckets is the number of buckets: Sub exact ones for 0 … Sub-1, then Sub
// for each power of two up to 2⁶³.
const Buckets = Sub + (63-subBits)*Sub

// Bucket returns the bucket that counts v.
func Bucket(v uint64) int {
	v = min(v, Max)
	if v < Sub {
		return int(v)
	}
	e := bits.Len64(v) - 1 // v is in [2^e, 2^(e+1))
	return (e-subBits+1)*Sub + int(v>>(e-subBits))&(Sub-1)
}

// Lower returns the smallest value bucket b counts.
func Lower(b int) uint64 {
	if b < Sub {
		return uint64(b)
	}
	e := b/Sub + subBits - 1
	return 1<<e + uint64(b%Sub)<<(e-subBits)
}

// Upper returns the bound above bucket b: one more than the largest value
// it counts (2⁶³ for the last).
func Upper(b int) uint64 {
	if b == Buckets-1 {
		return 1 << 63
	}
	return Lower(b + 1)
}

// Recorder counts values written by one goroutine and read at any time by
// others (Snapshot, AddTo). The zero value is empty and ready. Record costs
// two atomic loads and stores, no locked instruction.
type Recorder struct {
	counts [Buckets]atomic.Uint64
	sum    atomic.Uint64
}

// Record counts v. Only one goroutine may call it.
func (r *Recorder) Record(v uint64) {
	v = min(v, Max)
	c := &r.counts[Bucket(v)]
	c.Store(c.Load() + 1) // one writer: no read-modify-write race
	r.sum.Store(r.sum.Load() + v)
}

// AddTo adds what r has counted so far to c.
func (r *Recorder) AddTo(c *Counts) {
	for i := range r.counts {
		n := r.counts[i].Load()
		c.N[i] += n
		c.Count += n
	}
	c.Sum += r.sum.Load()
}

// Counts is a histogram as plain counts: N[b] values fell in bucket b. The
// zero value is empty and ready. Not safe for concurrent use.
type Counts struct {
	N     [Buckets]uint64
	Count uint64 // values counted: the sum of N
	Sum   uint64 // their sum (values above Max count as Max)
}

// Add counts v.
func (c *Counts) Add(v uint64) {
	v = min(v, Max)
	c.N[Bucket(v)]++
	c.Count++
	c.Sum += v
}

// Merge adds the counts of o to c.
func (c *Counts) Merge(o *Counts) {
	for i, n := range o.N {
		c.N[i] += n
	}
	c.Count += o.Count
	c.Sum += o.Sum
}

// Quantile estimates the q-quantile (0 < q ≤ 1) of the values counted:
// within 1/16 of the value at rank ⌈q·Count⌉ (1-based) of their sorted
// list. It returns 0 for an empty histogram.
func (c *Counts) Quantile(q float64) float64 {
	return Quantile(c.N[:], q, func(b int) (float64, float64) { return float64(Lower(b)), float64(Upper(b) - 1) })
}

// Quantile estimates the q-quantile (0 < q ≤ 1) of a histogram of any
// buckets: counts[b] values fell between lo and hi inclusive, bounds(b),
// buckets in increasing order. It finds the bucket holding the value of
// rank ⌈q·n⌉ and interpolates linearly inside it; a bucket with no upper
// bound (hi infinite) answers its lower bound. It returns 0 when counts are
// all 0.
func Quantile(counts []uint64, q float64, bounds func(b int) (lo, hi float64)) float64 {
	var n uint64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := max(math.Ceil(min(max(q, 0), 1)*float64(n)), 1)
	var seen uint64
	for b, c := range counts {
		if c == 0 || float64(seen+c) < rank {
			seen += c
			continue
		}
		lo, hi := bounds(b)
		if math.IsInf(hi, 1) {
			return lo
		}
		// The c values are taken as spread evenly over [lo, hi]: the
		// k-th of them (1-based) at lo + (k-½)/c of the width.
		return lo + (hi-lo)*(rank-float64(seen)-0.5)/float64(c)
	}
	lo, _ := bounds(len(counts) - 1)
	return lo
}

// Median returns the median of xs (the mean of the middle two for an even
// count), or NaN for none. It does not modify xs.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
