package otelx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metrics exports the counters of a set of pipelines, which can change
// while it runs, as OpenTelemetry metrics: the prom module's metrics,
// under the same names in OpenTelemetry's conventions (see the package
// documentation). Make one with [NewMetrics]; the zero Metrics is not
// usable. Its methods are safe for concurrent use.
//
// It reads [sluice.Pipeline.Stats] when a reader collects, and costs
// nothing per item. A collection costs two to four Stats calls per
// pipeline (until each latency histogram reads the same twice), about 20
// observations per stage, and one histogram Record per latency sample the
// stages took since the previous collection (a chunk in eight).
//
// The latency histogram is recorded sample by sample, each at a value
// inside its core bucket, so its bucket counts are the core's; the values
// are spread in their buckets so that their sum is the core's. It can lag
// by the duration of one sample per worker: a collection can read a
// sample's count while its worker has yet to add its duration, and the
// later samples make the difference up as far as their buckets allow.
//
// One Metrics serves a MeterProvider: a second one on the same provider
// would observe the same series twice; [Metrics.Add] the pipelines to the
// first instead.
type Metrics struct {
	pipelines metrics.Pipelines
	// mu is held by each collection throughout, so that two readers
	// collecting at once record each latency sample once.
	mu     sync.Mutex
	closed bool
	reg    metric.Registration
	in     map[*metrics.Metric]instrument
	// stats reads a pipeline's snapshot for a collection: steady, but for
	// tests.
	stats func(*sluice.Pipeline) sluice.Snapshot
	// seen is the latency histogram of each stage as of the last
	// collection: the histogram instrument is synchronous, so each
	// collection records what was added since.
	seen map[*sluice.Pipeline]map[string][]uint64
	sums map[*sluice.Pipeline]map[string]time.Duration
}

// instrument is the OpenTelemetry instrument of one metric of the list:
// one of the four is set.
type instrument struct {
	ints      metric.Int64Observable   // a counter or gauge of whole numbers
	floats    metric.Float64Observable // one in seconds
	histogram metric.Float64Histogram
}

// attrKey is the attribute of a label of the list: sluice.<label>, the
// stage's kind being sluice.stage.kind as on spans.
func attrKey(label string) attribute.Key {
	switch label {
	case "pipeline":
		return PipelineKey
	case "stage":
		return StageKey
	case "kind":
		return StageKindKey
	}
	return attribute.Key("sluice." + label)
}

// NewMetrics registers the instruments of [Metrics] with a meter of mp's
// and returns them, exporting the given pipelines. It returns an error if
// mp refuses an instrument or the callback; it panics if mp or a pipeline
// is nil, or two pipelines share a name (see [Metrics.Add]).
func NewMetrics(mp metric.MeterProvider, pipelines ...*sluice.Pipeline) (*Metrics, error) {
	if mp == nil {
		panic("otelx: NewMetrics called with a nil MeterProvider; pass otel.GetMeterProvider() for the global one")
	}
	m := &Metrics{
		seen:  map[*sluice.Pipeline]map[string][]uint64{},
		sums:  map[*sluice.Pipeline]map[string]time.Duration{},
		in:    map[*metrics.Metric]instrument{},
		stats: steady,
	}
	for _, p := range pipelines {
		m.Add(p)
	}
	meter := mp.Meter(ScopeName)
	var errs []error
	var observables []metric.Observable
	for _, d := range metrics.List() {
		unit, help := metric.WithUnit(d.Unit), metric.WithDescription(d.Help)
		var in instrument
		var err error
		switch {
		case d.Kind == metrics.Histogram:
			in.histogram, err = meter.Float64Histogram(d.Name, unit, help, metric.WithExplicitBucketBoundaries(latencyBounds...))
		case d.Kind == metrics.Counter && d.Seconds():
			in.floats, err = meter.Float64ObservableCounter(d.Name, unit, help)
		case d.Kind == metrics.Counter:
			in.ints, err = meter.Int64ObservableCounter(d.Name, unit, help)
		case d.Seconds():
			in.floats, err = meter.Float64ObservableGauge(d.Name, unit, help)
		default:
			in.ints, err = meter.Int64ObservableGauge(d.Name, unit, help)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if in.ints != nil {
			observables = append(observables, in.ints)
		} else if in.floats != nil {
			observables = append(observables, in.floats)
		}
		m.in[d] = in
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("otelx: making the instruments: %w", errors.Join(errs...))
	}
	var err error
	m.reg, err = meter.RegisterCallback(m.observe, observables...)
	if err != nil {
		return nil, fmt.Errorf("otelx: registering the metrics' callback: %w", err)
	}
	return m, nil
}

// Add starts exporting p; adding a pipeline already exported does nothing.
// Pipelines are told apart in metrics by name alone, so Add panics if
// another pipeline with p's name is exported: give them different names
// with [sluice.Named], or [Metrics.Remove] the old one first (as a job
// that reruns under one name would). It panics if p is nil.
func (m *Metrics) Add(p *sluice.Pipeline) {
	if err := m.pipelines.Add(p); err != nil {
		panic("otelx: " + err.Error())
	}
}

// Remove stops exporting p: its series are not observed from the next
// collection on, except its latency histograms, which OpenTelemetry's
// synchronous histograms cannot withdraw: they keep their counts. Removing
// a pipeline that is not exported does nothing.
func (m *Metrics) Remove(p *sluice.Pipeline) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pipelines.Remove(p)
	delete(m.seen, p)
	delete(m.sums, p)
}

// Close unregisters the metrics' callback: nothing is observed any more,
// and the latency histograms keep their counts (as after Remove). It
// returns the provider's error, if any; closing again does nothing.
func (m *Metrics) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	m.pipelines.Clear()
	return m.reg.Unregister()
}

// steady returns a snapshot of p in which each stage's latency histogram
// is one that two successive reads found alike, where up to maxReads
// snapshots allow (the last read otherwise): the core reads a histogram's
// counts and its sum one after the other, so that a single read can count
// a sample without its duration or the other way round. Two equal reads
// leave out only the samples whose worker sits between its two stores, one
// per worker at most.
func steady(p *sluice.Pipeline) sluice.Snapshot {
	const maxReads = 4
	snap := p.Stats()
	prev := snap.Stages
	calm := make([]bool, len(prev))
	for range maxReads - 1 {
		next := p.Stats().Stages
		restless := false
		for i := range snap.Stages {
			if calm[i] || i >= len(next) {
				continue
			}
			if sameHistogram(prev[i].Latency, next[i].Latency) {
				calm[i] = true
			} else {
				restless = true
			}
			snap.Stages[i].Latency = next[i].Latency
		}
		if !restless {
			break
		}
		prev = next
	}
	return snap
}

func sameHistogram(a, b sluice.Histogram) bool {
	return a.Count == b.Count && a.Sum == b.Sum && slices.Equal(a.Counts, b.Counts)
}

// observe is the callback every collection runs. It holds m.mu throughout,
// so that two readers collecting at once record each latency sample once.
func (m *Metrics) observe(ctx context.Context, o metric.Observer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range m.pipelines.List() {
		m.observePipeline(ctx, o, p, m.stats(p))
	}
	return nil
}

func (m *Metrics) observePipeline(ctx context.Context, o metric.Observer, p *sluice.Pipeline, s sluice.Snapshot) {
	seen, sums := m.seen[p], m.sums[p]
	if seen == nil {
		seen, sums = map[string][]uint64{}, map[string]time.Duration{}
		m.seen[p], m.sums[p] = seen, sums
	}
	metrics.Read(s, func(x metrics.Sample) {
		names := x.Metric.LabelNames()
		kv := make([]attribute.KeyValue, len(names))
		for i, n := range names {
			kv[i] = attrKey(n).String(x.Labels[i])
		}
		attrs := attribute.NewSet(kv...)
		in := m.in[x.Metric]
		switch {
		case in.histogram != nil:
			st := x.Stage()
			seen[st], sums[st] = recordSince(ctx, in.histogram, *x.Histogram, seen[st], sums[st], metric.WithAttributeSet(attrs))
		case in.floats != nil:
			o.ObserveFloat64(in.floats, x.Value, metric.WithAttributeSet(attrs))
		default:
			o.ObserveInt64(in.ints, int64(x.Value), metric.WithAttributeSet(attrs))
		}
	})
}
