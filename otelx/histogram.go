package otelx

import (
	"context"
	"slices"
	"time"

	"github.com/sluicehq/sluice"
	"go.opentelemetry.io/otel/metric"
)

// The exported latency histogram has the prom module's buckets: one per
// power of two of nanoseconds, with the upper bounds (2^k − 1) ns for
// k = minPow … maxPow (about 1 µs to 34 s). They are ends of the core's
// buckets (16 per power of two), so every exported count is exact.
const minPow, maxPow = 10, 35

var latencyBounds = func() []float64 {
	b := make([]float64, 0, maxPow-minPow+1)
	for k := minPow; k <= maxPow; k++ {
		b = append(b, time.Duration(1<<k-1).Seconds())
	}
	return b
}()

// recordSince records into h the samples that the core histogram now
// added since counts (its bucket counts when last recorded; nil for none)
// and returns the new counts and the sum of everything recorded so far.
//
// OpenTelemetry has no asynchronous histogram, so each sample is recorded
// with a value inside its core bucket: every sample of the collection at
// the same fraction α of its bucket's width, α chosen so that the values
// add up to the core's sum (which the buckets bound, so 0 ≤ α ≤ 1 but for
// rounding). Bucket counts are exact and the exported sum is the core's,
// give or take a nanosecond per sample. Where a snapshot read the sum and
// the counts at different instants, the difference is carried to the next
// collections and made up as far as their samples' buckets allow.
func recordSince(ctx context.Context, h metric.Float64Histogram, now sluice.Histogram, counts []uint64, recorded time.Duration,
	opt metric.RecordOption) ([]uint64, time.Duration) {
	if len(counts) != len(now.Counts) {
		counts = make([]uint64, len(now.Counts))
	}
	for i, c := range now.Counts {
		if c < counts[i] { // cannot happen to a pipeline's histogram: start again
			clear(counts)
			recorded = 0
			break
		}
	}
	// lo and width of bucket i, in nanoseconds; the last has no upper bound.
	span := func(i int) (lo, width int64) {
		if i > 0 {
			lo = int64(now.Bounds[i-1]) + 1
		}
		if i == len(now.Counts)-1 || i >= len(now.Bounds) || now.Bounds[i] == 0 {
			return lo, 0
		}
		return lo, int64(now.Bounds[i]) - lo
	}
	var low, width float64
	fresh := false
	for i, c := range now.Counts {
		if d := c - counts[i]; d > 0 {
			fresh = true
			lo, w := span(i)
			low += float64(d) * float64(lo)
			width += float64(d) * float64(w)
		}
	}
	if !fresh {
		return counts, recorded
	}
	if width == 0 {
		width = 1 // only buckets of one value or none above: α is moot
	}
	alpha := min(max((float64(now.Sum-recorded)-low)/width, 0), 1)
	for i, c := range now.Counts {
		d := c - counts[i]
		if d == 0 {
			continue
		}
		lo, w := span(i)
		v := time.Duration(lo + min(int64(alpha*float64(w)+0.5), w))
		s := v.Seconds()
		for range d {
			h.Record(ctx, s, opt)
		}
		recorded += time.Duration(d) * v
	}
	return slices.Clone(now.Counts), recorded
}
