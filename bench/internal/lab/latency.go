package lab

import (
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
)

// latencies counts durations at the resolution of a pipeline's own latency
// histograms (16 buckets per power of two: quantiles within 1/16), through
// the core's public sluice.Histogram. Not safe for concurrent use.
type latencies struct{ h sluice.Histogram }

func newLatencies() *latencies {
	b := pipelineBounds()
	return &latencies{sluice.Histogram{Bounds: b, Counts: make([]uint64, len(b))}}
}

// Add counts d.
func (l *latencies) Add(d time.Duration) {
	i, _ := slices.BinarySearch(l.h.Bounds[:len(l.h.Bounds)-1], d) // the last bucket has no bound
	l.h.Counts[i]++
}

// Quantile estimates the q-quantile (0 < q ≤ 1), or 0 when empty.
func (l *latencies) Quantile(q float64) time.Duration { return l.h.Quantile(q) }

// pipelineBounds are the Bounds of a pipeline's latency histograms, read
// from the stats of a pipeline that has run.
var pipelineBounds = sync.OnceValue(func() []time.Duration {
	p := sluice.New(context.Background())
	sluice.ForEach(p, "sink", sluice.FromSlice(p, "src", []int{1}), 1, func(context.Context, int) error { return nil })
	if err := p.Wait(); err != nil {
		panic(err)
	}
	for _, s := range p.Stats().Stages {
		if len(s.Latency.Bounds) > 0 {
			return s.Latency.Bounds
		}
	}
	panic("lab: no stage of a pipeline that ran has a latency histogram")
})

// median is the median of xs (the mean of the middle two for an even
// count), or NaN for none. It does not modify xs.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}
