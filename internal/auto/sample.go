package auto

import (
	"slices"
	"time"
)

// Sample is what a stage's workers did over an interval: the items they
// took, the time they spent working (calls included), waiting for input
// or room, or waiting on a Throttle, summed over the workers, and the
// calls of the stage's function that returned an error (retries and
// timeouts included), with Workers the count they ran at.
type Sample struct {
	Elapsed               time.Duration
	Items, Errors         int64
	Busy, Idle, Throttled time.Duration
	Workers               int
}

// Add adds o, taken at count n, to s.
func (s *Sample) Add(o Sample, n int) {
	s.Elapsed += o.Elapsed
	s.Items += o.Items
	s.Errors += o.Errors
	s.Busy += o.Busy
	s.Idle += o.Idle
	s.Throttled += o.Throttled
	s.Workers = n
}

// Enough says whether s can decide under t: enough items for a time per
// item, workers mostly not working (nothing to measure, something to
// decide), or a long enough wait.
func (s Sample) Enough(t Tuning) bool {
	life := s.Busy + s.Idle + s.Throttled
	return s.Items >= int64(max(t.EnoughItems, s.Workers)) ||
		(life > 0 && float64(s.Busy) < t.IdleBelow*float64(life)) || s.Elapsed >= t.MaxSample
}

// tick is one sample as the controller keeps it: throughput (items/ns),
// time per item (ns), errors per item, the share of the workers' time
// spent waiting on the Throttle, and the errors.
type tick struct {
	x, t, f, th float64
	errs        int64
}

// tickOf makes a tick of s; util is its busy share.
func tickOf(s Sample) (tk tick, util, throttled float64) {
	life := float64(s.Busy + s.Idle + s.Throttled)
	items := float64(max(s.Items, 1))
	tk = tick{x: items / float64(s.Elapsed), t: float64(s.Busy) / items, f: float64(s.Errors) / items, th: float64(s.Throttled) / life, errs: s.Errors}
	return tk, float64(s.Busy) / life, tk.th
}

// mean returns the mean throughput, time per item, errors per item and
// throttled share of ts; from three ticks on, each is their median: a tick in which the
// machine stalled the stage must neither decide nor become the reference
// that later ticks are compared with.
func mean(ts []tick) (m tick) {
	if len(ts) < 3 {
		for _, tk := range ts {
			m.x += tk.x
			m.t += tk.t
			m.f += tk.f
			m.th += tk.th
		}
		k := float64(len(ts))
		return tick{x: m.x / k, t: m.t / k, f: m.f / k, th: m.th / k}
	}
	xs, vs, fs, hs := make([]float64, len(ts)), make([]float64, len(ts)), make([]float64, len(ts)), make([]float64, len(ts))
	for i, tk := range ts {
		xs[i], vs[i], fs[i], hs[i] = tk.x, tk.t, tk.f, tk.th
	}
	return tick{x: median(xs), t: median(vs), f: median(fs), th: median(hs)}
}

// errSum sums the errors of ts.
func errSum(ts []tick) (n int64) {
	for _, tk := range ts {
		n += tk.errs
	}
	return n
}

// median sorts xs and returns their median.
func median(xs []float64) float64 {
	slices.Sort(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (m + xs[len(xs)/2-1]) / 2
	}
	return m
}
