package otelx

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
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
// pipeline (until each latency histogram reads the same twice), about 45
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
	mu        sync.Mutex
	pipelines []*sluice.Pipeline
	closed    bool
	reg       metric.Registration
	in        instruments
	// seen is the latency histogram of each stage as of the last
	// collection: the histogram instrument is synchronous, so each
	// collection records what was added since.
	seen map[*sluice.Pipeline]map[string][]uint64
	sums map[*sluice.Pipeline]map[string]time.Duration
}

type instruments struct {
	items, dropped, failed, retries, changes, errors                             metric.Int64ObservableCounter
	busy, blocked, throttled                                                     metric.Float64ObservableCounter
	queue, capacity, chunk, workers, waiting, target, bound, reason, info, state metric.Int64ObservableGauge
	changed                                                                      metric.Float64ObservableGauge
	latency                                                                      metric.Float64Histogram
	// Keyed and Window stages.
	keys, open, held, idle metric.Int64ObservableGauge
	wmLag                  metric.Float64ObservableGauge
	panes, late            metric.Int64ObservableCounter
}

// Attribute keys of the metrics, besides [PipelineKey], [StageKey] and
// [StageKindKey]: each label of the prom module's metrics is the attribute
// sluice.<label>, the stage's kind being sluice.stage.kind as on spans.
const (
	directionKey = attribute.Key("sluice.direction")
	reasonKey    = attribute.Key("sluice.reason")
	boundKey     = attribute.Key("sluice.bound")
	policyKey    = attribute.Key("sluice.policy")
	stateKey     = attribute.Key("sluice.state")
	revisionKey  = attribute.Key("sluice.revision")
	routeKey     = attribute.Key("sluice.route")
)

// NewMetrics registers the instruments of [Metrics] with a meter of mp's
// and returns them, exporting the given pipelines. It returns an error if
// mp refuses an instrument or the callback; it panics if mp or a pipeline
// is nil, or two pipelines share a name (see [Metrics.Add]).
func NewMetrics(mp metric.MeterProvider, pipelines ...*sluice.Pipeline) (*Metrics, error) {
	if mp == nil {
		panic("otelx: NewMetrics called with a nil MeterProvider; pass otel.GetMeterProvider() for the global one")
	}
	m := &Metrics{
		seen: map[*sluice.Pipeline]map[string][]uint64{},
		sums: map[*sluice.Pipeline]map[string]time.Duration{},
	}
	for _, p := range pipelines {
		m.Add(p)
	}
	meter := mp.Meter(ScopeName)
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	i := &m.in
	ic := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		check(err)
		return c
	}
	fc := func(name, desc string) metric.Float64ObservableCounter {
		c, err := meter.Float64ObservableCounter(name, metric.WithUnit("s"), metric.WithDescription(desc))
		check(err)
		return c
	}
	ig := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		check(err)
		return g
	}
	i.items = ic("sluice.stage.items", "{item}",
		"Items a stage took from its input (sluice.direction=in) or handed to its output (sluice.direction=out).")
	i.dropped = ic("sluice.stage.dropped", "{item}",
		"Items discarded by a stage's overflow policy (sluice.reason) because its output queue was full.")
	i.failed = ic("sluice.stage.failed", "{item}",
		"Items whose stage function failed and that the stage's error policy skipped or dead-lettered.")
	i.retries = ic("sluice.stage.retries", "{call}", "Calls of a stage's function repeated by its Retry option.")
	i.changes = ic("sluice.stage.workers.changes", "{change}", "Changes of a sluice.Auto stage's worker count.")
	i.errors = ic("sluice.pipeline.errors", "{error}", "1 once the pipeline's Wait has returned an error.")
	i.busy = fc("sluice.stage.busy", "Time a stage's workers spent working, summed over its workers.")
	i.blocked = fc("sluice.stage.blocked",
		"Time a stage's workers spent waiting for input or for room downstream, summed over its workers.")
	i.throttled = fc("sluice.stage.throttled",
		"Time a stage's workers spent waiting on its Throttle's limiter, summed over its workers.")
	i.queue = ig("sluice.stage.queue.length", "{item}", "Items queued on a stage's input, waiting for it.")
	i.capacity = ig("sluice.stage.queue.capacity", "{item}", "Items a stage's input queue holds when full.")
	i.chunk = ig("sluice.stage.input.chunk_size", "{item}",
		"Items a chunk of a stage's input carries now: it adapts to the stage's cost per item.")
	i.workers = ig("sluice.stage.workers", "{goroutine}", "Goroutines of a stage still running.")
	i.waiting = ig("sluice.stage.workers.waiting", "{goroutine}",
		"Goroutines of a stage waiting for input or for room downstream.")
	i.target = ig("sluice.stage.workers.target", "{goroutine}",
		"Goroutines the engine chooses for a stage with sluice.Auto (exported for those stages only).")
	i.bound = ig("sluice.stage.workers.bound", "{goroutine}", "The bounds given to sluice.Auto: sluice.bound=min or max.")
	i.reason = ig("sluice.stage.workers.reason", "",
		"Always 1: why a sluice.Auto stage's worker count last changed (sluice.reason), from a fixed set: start, grow, no-gain, latency, idle, throttled.")
	i.info = ig("sluice.stage.info", "",
		"Always 1: a stage's kind (sluice.stage.kind) and the overflow policy of its output (sluice.policy).")
	i.state = ig("sluice.pipeline.state", "",
		"1 for the pipeline's current state (sluice.state): running, or done (Wait has returned).")
	i.keys = ig("sluice.stage.keys", "{key}", "Keys a Keyed or Window stage holds state for.")
	i.open = ig("sluice.window.open", "{window}", "Windows a Window stage holds: not emitted yet, or kept for lateness.")
	i.held = ig("sluice.window.held_receipts", "{receipt}", "Receipts a Window stage's open windows hold, not yet handed on in a pane.")
	i.idle = ig("sluice.window.idle_partitions", "{partition}",
		"Source partitions a Window stage's watermark no longer waits for, idle longer than WindowSpec.Idle.")
	i.panes = ic("sluice.window.panes", "{pane}", "Panes a Window stage emitted, by sluice.revision: first, or update by late items.")
	i.late = ic("sluice.window.late", "{item}",
		"Items later than their window's lateness, by sluice.route: stream (the late stream), or dropped (acknowledged, no late stream set).")
	var err error
	i.wmLag, err = meter.Float64ObservableGauge("sluice.window.watermark.lag", metric.WithUnit("s"),
		metric.WithDescription("How far a Window stage's watermark is behind the wall clock."))
	check(err)
	i.changed, err = meter.Float64ObservableGauge("sluice.stage.workers.changed_timestamp", metric.WithUnit("s"),
		metric.WithDescription("Unix time at which a sluice.Auto stage's worker count last changed (or the stage started)."))
	check(err)
	i.latency, err = meter.Float64Histogram("sluice.stage.latency", metric.WithUnit("s"),
		metric.WithDescription("Time from an item's hand-off to a stage's input until the stage has finished with it, sampled one chunk in eight."),
		metric.WithExplicitBucketBoundaries(latencyBounds...))
	check(err)
	if len(errs) > 0 {
		return nil, fmt.Errorf("otelx: making the instruments: %w", errors.Join(errs...))
	}
	m.reg, err = meter.RegisterCallback(m.observe, i.items, i.dropped, i.failed, i.retries, i.changes, i.errors,
		i.busy, i.blocked, i.throttled, i.queue, i.capacity, i.chunk, i.workers, i.waiting, i.target, i.bound,
		i.reason, i.info, i.state, i.changed, i.keys, i.open, i.held, i.idle, i.wmLag, i.panes, i.late)
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
	if p == nil {
		panic("otelx: Metrics.Add called with a nil *sluice.Pipeline")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, q := range m.pipelines {
		if q == p {
			return
		}
		if q.Name() == p.Name() {
			panic(fmt.Sprintf("otelx: a pipeline named %q is already exported; name pipelines apart with sluice.Named or remove the old one", p.Name()))
		}
	}
	m.pipelines = append(m.pipelines, p)
}

// Remove stops exporting p: its series are not observed from the next
// collection on, except its latency histograms, which OpenTelemetry's
// synchronous histograms cannot withdraw: they keep their counts. Removing
// a pipeline that is not exported does nothing.
func (m *Metrics) Remove(p *sluice.Pipeline) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pipelines = slices.DeleteFunc(m.pipelines, func(q *sluice.Pipeline) bool { return q == p })
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
	m.pipelines = nil
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
	for _, p := range m.pipelines {
		m.observePipeline(ctx, o, p, steady(p))
	}
	return nil
}

func (m *Metrics) observePipeline(ctx context.Context, o metric.Observer, p *sluice.Pipeline, s sluice.Snapshot) {
	i := &m.in
	pl := PipelineKey.String(s.Pipeline)
	with := func(kv ...attribute.KeyValue) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(kv...))
	}
	running, done := int64(1), int64(0)
	if s.Done {
		running, done = 0, 1
	}
	o.ObserveInt64(i.state, running, with(pl, stateKey.String("running")))
	o.ObserveInt64(i.state, done, with(pl, stateKey.String("done")))
	failed := int64(0)
	if s.Err != "" {
		failed = 1
	}
	o.ObserveInt64(i.errors, failed, with(pl))

	policy := make(map[string]string, len(s.Stages)) // of each stage's output
	for _, e := range s.Edges {
		if _, ok := policy[e.From]; !ok {
			policy[e.From] = e.Policy
		}
	}
	seen, sums := m.seen[p], m.sums[p]
	if seen == nil {
		seen, sums = map[string][]uint64{}, map[string]time.Duration{}
		m.seen[p], m.sums[p] = seen, sums
	}
	for _, st := range s.Stages {
		stage := StageKey.String(st.Name) // unique within a pipeline: the core enforces it
		base := with(pl, stage)
		o.ObserveInt64(i.info, 1, with(pl, stage, StageKindKey.String(st.Kind), policyKey.String(policy[st.Name])))
		o.ObserveInt64(i.items, st.In, with(pl, stage, directionKey.String("in")))
		o.ObserveInt64(i.items, st.Out, with(pl, stage, directionKey.String("out")))
		if reason := policy[st.Name]; reason == sluice.DropNewest.String() || reason == sluice.DropOldest.String() {
			o.ObserveInt64(i.dropped, st.Dropped, with(pl, stage, reasonKey.String(reason)))
		}
		o.ObserveInt64(i.failed, st.Failed, base)
		o.ObserveInt64(i.retries, st.Retries, base)
		o.ObserveFloat64(i.busy, st.Busy.Seconds(), base)
		o.ObserveFloat64(i.blocked, st.Blocked.Seconds(), base)
		o.ObserveFloat64(i.throttled, st.Throttled.Seconds(), base)
		o.ObserveInt64(i.workers, int64(st.Running), base)
		if a := st.Auto; a != nil {
			o.ObserveInt64(i.target, int64(st.Workers), base)
			o.ObserveInt64(i.bound, int64(a.Min), with(pl, stage, boundKey.String("min")))
			o.ObserveInt64(i.bound, int64(a.Max), with(pl, stage, boundKey.String("max")))
			o.ObserveInt64(i.changes, int64(a.Changes), base)
			o.ObserveInt64(i.reason, 1, with(pl, stage, reasonKey.String(a.Reason.String())))
			o.ObserveFloat64(i.changed, float64(a.Changed.UnixNano())/1e9, base)
		}
		o.ObserveInt64(i.waiting, int64(st.Waiting), base)
		if st.Kind == "keyed" || st.Window != nil {
			o.ObserveInt64(i.keys, st.Keys, base)
		}
		if w := st.Window; w != nil {
			if !w.Watermark.IsZero() {
				o.ObserveFloat64(i.wmLag, w.Lag.Seconds(), base)
			}
			o.ObserveInt64(i.open, w.Open, base)
			o.ObserveInt64(i.held, w.Held, base)
			o.ObserveInt64(i.idle, int64(w.IdlePartitions), base)
			o.ObserveInt64(i.panes, w.Emitted-w.Updated, with(pl, stage, revisionKey.String("first")))
			o.ObserveInt64(i.panes, w.Updated, with(pl, stage, revisionKey.String("update")))
			o.ObserveInt64(i.late, w.Late, with(pl, stage, routeKey.String("stream")))
			o.ObserveInt64(i.late, w.LateDropped, with(pl, stage, routeKey.String("dropped")))
		}
		if st.InCapacity == 0 {
			continue // a source: no input queue, no latency
		}
		o.ObserveInt64(i.queue, st.InDepth, base)
		o.ObserveInt64(i.capacity, int64(st.InCapacity), base)
		o.ObserveInt64(i.chunk, int64(st.InChunkSize), base)
		seen[st.Name], sums[st.Name] = recordSince(ctx, i.latency, st.Latency, seen[st.Name], sums[st.Name], base)
	}
}
