// Package metrics is the one list of the metrics a pipeline's
// [sluice.Pipeline.Stats] exports — names, units, help, labels — and the
// set of pipelines an exporter shows. The prom and otelx modules render
// the same list, each in its own conventions, so that a series exists in
// both or in neither.
//
// A metric is named as OpenTelemetry names it ("sluice.stage.items",
// unit "{item}"); Prometheus's name is derived from it (dots become
// underscores, "_seconds" follows a unit of "s", "_total" a counter's
// name: "sluice_stage_items_total"). Its labels are the pipeline's name
// ("pipeline"), the stage's ("stage") for a stage's metric, then its own;
// OpenTelemetry's attribute of a label is "sluice.<label>", the stage's
// kind being "sluice.stage.kind".
//
// Adding a metric is one entry in [All]: its name, unit, kind, help,
// labels and the function that reads it from a snapshot. A test of this
// package fails when a field of [sluice.StageStats] or
// [sluice.AutoStats] is read by no metric and not listed as not
// exported, and the tests of prom and otelx check that each exposes
// every series this list reads.
//
// A broker connector's metrics ("sluice.kafka.source.records.received",
// …) are described once, in the connector's module, with [For] and
// [Register]; they follow All in [List], and an exporter renders them as
// it renders All, for every stage to which the connector attached its
// statistics ([sluice.Pipeline.AttachConnector]). [Unread] is the
// connectors' check that each field of their statistics is exported.
package metrics

import (
	"reflect"
	"slices"
	"strings"

	"github.com/sluicehq/sluice"
)

// Kind is how a metric's value behaves.
type Kind int

const (
	Counter   Kind = iota + 1 // a cumulative figure that never falls
	Gauge                     // a value that goes up and down
	Histogram                 // a distribution: the sample's Histogram
)

// Metric describes one metric.
type Metric struct {
	Name string // as OpenTelemetry names it: "sluice.stage.items"
	// Unit is the unit as OpenTelemetry writes it (UCUM): "s" for
	// seconds, a counted thing in braces ("{item}"), "" for none.
	Unit string
	Kind Kind
	Help string
	// Labels are the metric's own labels, after "pipeline" (and "stage"
	// for a stage's metric): see [Metric.LabelNames].
	Labels []string
	// PerPipeline is set for a metric of the whole pipeline, which has no
	// "stage" label.
	PerPipeline bool

	read  func(r *reader) // puts the metric's samples of r's snapshot (and stage)
	stats reflect.Type    // the connector statistics it reads (For); nil for the core's
}

// LabelNames returns every label of m, in the order a [Sample]'s Labels
// hold their values: "pipeline", "stage" unless m is PerPipeline, then
// m.Labels.
func (m *Metric) LabelNames() []string {
	names := []string{"pipeline"}
	if !m.PerPipeline {
		names = append(names, "stage")
	}
	return append(names, m.Labels...)
}

// PrometheusName is m's name as Prometheus writes it: dots become
// underscores, "_seconds" follows a metric in seconds and "_total" a
// counter's ("sluice.stage.busy" → "sluice_stage_busy_seconds_total").
func (m *Metric) PrometheusName() string {
	n := strings.ReplaceAll(m.Name, ".", "_")
	if m.Seconds() {
		n += "_seconds"
	}
	if m.Kind == Counter {
		n += "_total"
	}
	return n
}

// Seconds reports whether m's values are seconds (and so not whole
// numbers).
func (m *Metric) Seconds() bool { return m.Unit == "s" }

// Sample is one series' value in a snapshot.
type Sample struct {
	Metric *Metric
	Labels []string // the values of Metric.LabelNames(), in that order
	Value  float64  // a Counter's or a Gauge's value
	// Histogram is a Histogram metric's value (Value is unused); it is
	// the snapshot's, not a copy.
	Histogram *sluice.Histogram
}

// Stage is the stage a Sample is of; "" for a PerPipeline metric.
func (s Sample) Stage() string {
	if s.Metric.PerPipeline {
		return ""
	}
	return s.Labels[1]
}

// reader is what a metric's read function gets: the snapshot, the stage
// being read (nil for a PerPipeline metric) and its output's overflow
// policy.
type reader struct {
	snap   *sluice.Snapshot
	stage  *sluice.StageStats
	policy string
	m      *Metric
	base   []string // pipeline (and stage) label values
	f      func(Sample)
}

func (r *reader) put(v float64, labels ...string) {
	r.f(Sample{Metric: r.m, Labels: append(slices.Clip(r.base), labels...), Value: v})
}

func (r *reader) putHistogram(h *sluice.Histogram) {
	r.f(Sample{Metric: r.m, Labels: slices.Clone(r.base), Histogram: h})
}

// Read calls f with every sample of s, metric by metric in the order of
// [List], stage by stage in the order of s.Stages. Stages without an input
// (sources) have no queue and latency samples; only stages with
// [sluice.Auto] have the workers' target, bounds, changes, reason and
// time of change; only stages whose output drops have a dropped count;
// only stages with a connector's statistics attached have that
// connector's metrics ([For]).
func Read(s sluice.Snapshot, f func(Sample)) {
	policy := make(map[string]string, len(s.Stages)) // of each stage's output
	for _, e := range s.Edges {
		if _, ok := policy[e.From]; !ok {
			policy[e.From] = e.Policy
		}
	}
	for _, m := range List() {
		if m.PerPipeline {
			m.read(&reader{snap: &s, m: m, base: []string{s.Pipeline}, f: f})
			continue
		}
		for j := range s.Stages {
			st := &s.Stages[j]
			m.read(&reader{snap: &s, stage: st, policy: policy[st.Name], m: m, base: []string{s.Pipeline, st.Name}, f: f})
		}
	}
}

// AutoReasons returns every [sluice.AutoReason], in order: the values the
// "reason" label of sluice.stage.workers.reason takes.
func AutoReasons() []sluice.AutoReason {
	var rs []sluice.AutoReason
	for r := sluice.AutoReason(1); !strings.HasPrefix(r.String(), "AutoReason("); r++ {
		rs = append(rs, r)
	}
	return rs
}

func reasonNames() string {
	var names []string
	for _, r := range AutoReasons() {
		names = append(names, r.String())
	}
	return strings.Join(names, ", ")
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// auto reads a stage's Auto figure: nothing for a stage without Auto.
func auto(read func(r *reader, a *sluice.AutoStats)) func(*reader) {
	return func(r *reader) {
		if a := r.stage.Auto; a != nil {
			read(r, a)
		}
	}
}

// window reads a Window stage's figure: nothing for other stages.
func window(read func(r *reader, w *sluice.WindowStats)) func(*reader) {
	return func(r *reader) {
		if w := r.stage.Window; w != nil {
			read(r, w)
		}
	}
}

// withInput reads a figure of a stage's input: nothing for a source.
func withInput(read func(r *reader, st *sluice.StageStats)) func(*reader) {
	return func(r *reader) {
		if r.stage.InCapacity != 0 {
			read(r, r.stage)
		}
	}
}

// All is every metric, in the order exporters list them. Append an entry
// to add one; keep the name unique.
var All = []Metric{
	{Name: "sluice.pipeline.state", Kind: Gauge, PerPipeline: true, Labels: []string{"state"},
		Help: "1 for the pipeline's current state: running, or done (Wait has returned).",
		read: func(r *reader) {
			r.put(b2f(!r.snap.Done), "running")
			r.put(b2f(r.snap.Done), "done")
		}},
	{Name: "sluice.pipeline.errors", Unit: "{error}", Kind: Counter, PerPipeline: true,
		Help: "1 once the pipeline's Wait has returned an error.",
		read: func(r *reader) { r.put(b2f(r.snap.Err != "")) }},
	{Name: "sluice.stage.info", Kind: Gauge, Labels: []string{"kind", "policy"},
		Help: "Always 1: a stage's kind (map, batch, reduce, ...) and the overflow policy of its output.",
		read: func(r *reader) { r.put(1, r.stage.Kind, r.policy) }},
	{Name: "sluice.stage.items", Unit: "{item}", Kind: Counter, Labels: []string{"direction"},
		Help: "Items a stage took from its input (direction=in) or handed to its output (direction=out).",
		read: func(r *reader) {
			r.put(float64(r.stage.In), "in")
			r.put(float64(r.stage.Out), "out")
		}},
	{Name: "sluice.stage.input.items", Unit: "{item}", Kind: Counter,
		Help: "Items inside what a stage took from its input: the items of the batches for a stage after a Batch, its input items otherwise.",
		read: func(r *reader) { r.put(float64(r.stage.InItems)) }},
	{Name: "sluice.stage.dropped", Unit: "{item}", Kind: Counter, Labels: []string{"reason"},
		Help: "Items discarded by a stage's overflow policy (the reason) because its output queue was full.",
		read: func(r *reader) {
			if r.policy == sluice.DropNewest.String() || r.policy == sluice.DropOldest.String() {
				r.put(float64(r.stage.Dropped), r.policy)
			}
		}},
	{Name: "sluice.stage.failed", Unit: "{item}", Kind: Counter,
		Help: "Items whose stage function failed and that the stage's error policy skipped or dead-lettered.",
		read: func(r *reader) { r.put(float64(r.stage.Failed)) }},
	{Name: "sluice.stage.dead_lettered", Unit: "{item}", Kind: Counter,
		Help: "Failed items a stage handed to its dead-letter stream (DeadLetter): a part of the failed ones.",
		read: func(r *reader) { r.put(float64(r.stage.DeadLettered)) }},
	{Name: "sluice.stage.retries", Unit: "{call}", Kind: Counter,
		Help: "Calls of a stage's function repeated by its Retry option.",
		read: func(r *reader) { r.put(float64(r.stage.Retries)) }},
	{Name: "sluice.stage.busy", Unit: "s", Kind: Counter,
		Help: "Time a stage's workers spent working, summed over its workers.",
		read: func(r *reader) { r.put(r.stage.Busy.Seconds()) }},
	{Name: "sluice.stage.blocked", Unit: "s", Kind: Counter,
		Help: "Time a stage's workers spent waiting for input or for room downstream, summed over its workers.",
		read: func(r *reader) { r.put(r.stage.Blocked.Seconds()) }},
	{Name: "sluice.stage.throttled", Unit: "s", Kind: Counter,
		Help: "Time a stage's workers spent waiting on its Throttle's limiter, summed over its workers.",
		read: func(r *reader) { r.put(r.stage.Throttled.Seconds()) }},
	{Name: "sluice.stage.workers", Unit: "{goroutine}", Kind: Gauge,
		Help: "Goroutines of a stage still running.",
		read: func(r *reader) { r.put(float64(r.stage.Running)) }},
	{Name: "sluice.stage.workers.waiting", Unit: "{goroutine}", Kind: Gauge,
		Help: "Goroutines of a stage waiting for input or for room downstream.",
		read: func(r *reader) { r.put(float64(r.stage.Waiting)) }},
	{Name: "sluice.stage.workers.waiting_for_room", Unit: "{goroutine}", Kind: Gauge,
		Help: "Goroutines of a stage waiting for room downstream: a part of the waiting ones; the stage's consumer is slower.",
		read: func(r *reader) { r.put(float64(r.stage.WaitingForRoom)) }},
	{Name: "sluice.stage.workers.target", Unit: "{goroutine}", Kind: Gauge,
		Help: "Goroutines the engine chooses for a stage with sluice.Auto (exported for those stages only).",
		read: auto(func(r *reader, _ *sluice.AutoStats) { r.put(float64(r.stage.Workers)) })},
	{Name: "sluice.stage.workers.bound", Unit: "{goroutine}", Kind: Gauge, Labels: []string{"bound"},
		Help: "The bounds given to sluice.Auto: bound=min or max.",
		read: auto(func(r *reader, a *sluice.AutoStats) {
			r.put(float64(a.Min), "min")
			r.put(float64(a.Max), "max")
		})},
	{Name: "sluice.stage.workers.changes", Unit: "{change}", Kind: Counter,
		Help: "Changes of a sluice.Auto stage's worker count.",
		read: auto(func(r *reader, a *sluice.AutoStats) { r.put(float64(a.Changes)) })},
	{Name: "sluice.stage.workers.reason", Kind: Gauge, Labels: []string{"reason"},
		Help: "Always 1: why a sluice.Auto stage's worker count last changed, from a fixed set: " + reasonNames() + ".",
		read: auto(func(r *reader, a *sluice.AutoStats) { r.put(1, a.Reason.String()) })},
	{Name: "sluice.stage.workers.changed_timestamp", Unit: "s", Kind: Gauge,
		Help: "Unix time at which a sluice.Auto stage's worker count last changed (or the stage started).",
		read: auto(func(r *reader, a *sluice.AutoStats) { r.put(float64(a.Changed.UnixNano()) / 1e9) })},
	{Name: "sluice.stage.queue.length", Unit: "{item}", Kind: Gauge,
		Help: "Items queued on a stage's input, waiting for it.",
		read: withInput(func(r *reader, st *sluice.StageStats) { r.put(float64(st.InDepth)) })},
	{Name: "sluice.stage.queue.capacity", Unit: "{item}", Kind: Gauge,
		Help: "Items a stage's input queue holds when full.",
		read: withInput(func(r *reader, st *sluice.StageStats) { r.put(float64(st.InCapacity)) })},
	{Name: "sluice.stage.input.chunk_size", Unit: "{item}", Kind: Gauge,
		Help: "Items a chunk of a stage's input carries now: it adapts to the stage's cost per item.",
		read: withInput(func(r *reader, st *sluice.StageStats) { r.put(float64(st.InChunkSize)) })},
	{Name: "sluice.stage.keys", Unit: "{key}", Kind: Gauge,
		Help: "Keys a Keyed or Window stage holds state for.",
		read: func(r *reader) { r.put(float64(r.stage.Keys)) }},
	{Name: "sluice.window.watermark.lag", Unit: "s", Kind: Gauge,
		Help: "How far a Window stage's watermark (event time) is behind the wall clock (exported for Window stages only).",
		read: window(func(r *reader, w *sluice.WindowStats) { r.put(w.Lag.Seconds()) })},
	{Name: "sluice.window.watermark_timestamp", Unit: "s", Kind: Gauge,
		Help: "A Window stage's watermark, as Unix time (0 before its first item).",
		read: window(func(r *reader, w *sluice.WindowStats) {
			if w.Watermark.IsZero() {
				r.put(0)
				return
			}
			r.put(float64(w.Watermark.UnixNano()) / 1e9)
		})},
	{Name: "sluice.window.partitions", Unit: "{partition}", Kind: Gauge, Labels: []string{"state"},
		Help: "Source partitions a Window stage has seen: state=active holds the watermark back, state=idle was set aside for being idle.",
		read: window(func(r *reader, w *sluice.WindowStats) {
			r.put(float64(w.Partitions-w.IdlePartitions), "active")
			r.put(float64(w.IdlePartitions), "idle")
		})},
	{Name: "sluice.window.open", Unit: "{window}", Kind: Gauge,
		Help: "Windows a Window stage holds: not emitted yet, or kept for lateness.",
		read: window(func(r *reader, w *sluice.WindowStats) { r.put(float64(w.Open)) })},
	{Name: "sluice.window.held", Unit: "{receipt}", Kind: Gauge,
		Help: "Receipts a Window stage's open windows hold: messages not yet acknowledged because their window is open.",
		read: window(func(r *reader, w *sluice.WindowStats) { r.put(float64(w.Held)) })},
	{Name: "sluice.window.panes", Unit: "{pane}", Kind: Counter, Labels: []string{"revision"},
		Help: "Panes a Window stage handed on: revision=first for a window's first result, revision=update for an update by a late item.",
		read: window(func(r *reader, w *sluice.WindowStats) {
			r.put(float64(w.Emitted-w.Updated), "first")
			r.put(float64(w.Updated), "update")
		})},
	{Name: "sluice.window.late", Unit: "{item}", Kind: Counter, Labels: []string{"route"},
		Help: "Items later than a Window stage's allowed lateness: route=late_stream went to its late stream, route=dropped were acknowledged and not kept because it has none (WindowStats.LateDropped).",
		read: window(func(r *reader, w *sluice.WindowStats) {
			r.put(float64(w.Late), "late_stream")
			r.put(float64(w.LateDropped), "dropped")
		})},
	{Name: "sluice.window.revoked", Unit: "{window}", Kind: Counter,
		Help: "Windows a Window stage discarded unemitted because every input they held came from source partitions taken away (a rebalance): their new reader computes them.",
		read: window(func(r *reader, w *sluice.WindowStats) { r.put(float64(w.Revoked)) })},
	{Name: "sluice.window.revoked_items", Unit: "{item}", Kind: Counter,
		Help: "Items of source partitions taken away (a rebalance) that reached a Window stage after the revoke: dropped unsettled, for their new reader (WindowStats.RevokedItems).",
		read: window(func(r *reader, w *sluice.WindowStats) { r.put(float64(w.RevokedItems)) })},
	{Name: "sluice.stage.latency", Unit: "s", Kind: Histogram,
		Help: "Time from an item's hand-off to a stage's input until the stage has finished with it, sampled one chunk in eight.",
		read: withInput(func(r *reader, st *sluice.StageStats) { r.putHistogram(&st.Latency) })},
}
