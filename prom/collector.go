// Package prom exports the counters of running sluice pipelines as
// Prometheus metrics, through a [prometheus.Collector] that reads
// [sluice.Pipeline.Stats] at every scrape.
//
//	c := prom.NewCollector(p)
//	prometheus.MustRegister(c)
//	http.Handle("/metrics", promhttp.Handler())
//
// Every series is labelled with the pipeline's name (see [sluice.Named])
// and, for stage series, the stage's name:
//
//	sluice_stage_items_total{pipeline,stage,direction="in"|"out"}  counter
//	sluice_stage_dropped_total{pipeline,stage,reason}               counter; reason is the overflow policy
//	                                                                (drop-newest, drop-oldest); only stages that drop
//	sluice_stage_failed_total{pipeline,stage}                       counter: items whose function failed, skipped
//	                                                                or dead-lettered by the stage's error policy
//	sluice_stage_retries_total{pipeline,stage}                      counter: calls repeated by the Retry option
//	sluice_stage_queue_length{pipeline,stage}                       gauge: items queued on the stage's input
//	sluice_stage_queue_capacity{pipeline,stage}                     gauge: items that input holds when full
//	sluice_stage_input_chunk_size{pipeline,stage}                   gauge: items a chunk of that input carries now
//	sluice_stage_busy_seconds_total{pipeline,stage}                 counter: worker time spent working
//	sluice_stage_blocked_seconds_total{pipeline,stage}              counter: worker time spent waiting
//	sluice_stage_workers{pipeline,stage}                            gauge: goroutines still running
//	sluice_stage_workers_waiting{pipeline,stage}                    gauge: of those, waiting for input or room
//	sluice_stage_throttled_seconds_total{pipeline,stage}            counter: worker time spent waiting on the
//	                                                                stage's Throttle
//
// Stages with sluice.Auto, whose worker count the engine chooses, also have:
//
//	sluice_stage_workers_target{pipeline,stage}                     gauge: the count the engine chooses now
//	sluice_stage_workers_bound{pipeline,stage,bound="min"|"max"}    gauge: Auto's bounds
//	sluice_stage_workers_changes_total{pipeline,stage}              counter: changes of the count
//	sluice_stage_workers_reason{pipeline,stage,reason}              gauge, always 1: why it last changed — one of
//	                                                                a fixed set (start, grow, no-gain, latency,
//	                                                                failing, idle, throttled, probe: sluice.AutoReason),
//	                                                                so the label stays bounded
//	sluice_stage_workers_changed_timestamp_seconds{pipeline,stage}  gauge: when it last changed (Unix time)
//
// and for every stage:
//
//	sluice_stage_latency_seconds{pipeline,stage}                    histogram: queueing plus processing,
//	                                                                sampled one chunk in eight; one bucket per
//	                                                                power of two of nanoseconds, ~1 µs to ~34 s
//	sluice_stage_info{pipeline,stage,kind,policy}                   gauge, always 1
//	sluice_pipeline_state{pipeline,state="running"|"done"}          gauge, 1 for the current state
//	sluice_pipeline_errors_total{pipeline}                          counter: 1 once Wait returned an error
//
// Stages without an input (sources) have no queue and latency series.
// A pipeline keeps being exported after it is done, with its final counts,
// until it is removed; a rate() over its counters then falls to zero.
// Every counter comes from a cumulative figure of [sluice.Snapshot] that
// never falls from one snapshot to the next, so none falls between scrapes.
//
// One Collector serves a registry: a second one registered on the same
// registry is refused (prometheus.AlreadyRegisteredError), its metrics
// being the same; [Collector.Add] the pipelines to the first instead.
//
// Cost: nothing per item. A scrape costs one Stats call per pipeline (a
// few atomic loads per worker and edge) and about 45 samples per stage.
package prom

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice"
)

// Collector is a [prometheus.Collector] for a set of pipelines that can
// change while it is registered. Make one with [NewCollector]; the zero
// Collector is not usable. Its methods are safe for concurrent use.
type Collector struct {
	mu        sync.Mutex
	pipelines []*sluice.Pipeline
}

// NewCollector returns a collector exporting the given pipelines. It
// panics if one is nil or two share a name (see [Collector.Add]).
func NewCollector(pipelines ...*sluice.Pipeline) *Collector {
	c := &Collector{}
	for _, p := range pipelines {
		c.Add(p)
	}
	return c
}

// Add starts exporting p; adding a pipeline already exported does nothing.
// Pipelines are told apart in metrics by name alone, so Add panics if
// another pipeline with p's name is exported: give them different names
// with [sluice.Named], or [Collector.Remove] the old one first (as a job
// that reruns under one name would). It panics if p is nil.
func (c *Collector) Add(p *sluice.Pipeline) {
	if p == nil {
		panic("prom: Add called with a nil *sluice.Pipeline")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, q := range c.pipelines {
		if q == p {
			return
		}
		if q.Name() == p.Name() {
			panic(fmt.Sprintf("prom: a pipeline named %q is already exported; name pipelines apart with sluice.Named or remove the old one", p.Name()))
		}
	}
	c.pipelines = append(c.pipelines, p)
}

// Remove stops exporting p; its series disappear from the next scrape.
// Removing a pipeline that is not exported does nothing.
func (c *Collector) Remove(p *sluice.Pipeline) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pipelines = slices.DeleteFunc(c.pipelines, func(q *sluice.Pipeline) bool { return q == p })
}

var (
	stageLabels = []string{"pipeline", "stage"}

	itemsDesc = prometheus.NewDesc("sluice_stage_items_total",
		"Items a stage took from its input (direction=in) or handed to its output (direction=out).",
		[]string{"pipeline", "stage", "direction"}, nil)
	droppedDesc = prometheus.NewDesc("sluice_stage_dropped_total",
		"Items discarded by a stage's overflow policy (the reason) because its output queue was full.",
		[]string{"pipeline", "stage", "reason"}, nil)
	failedDesc = prometheus.NewDesc("sluice_stage_failed_total",
		"Items whose stage function failed and that the stage's error policy skipped or dead-lettered.", stageLabels, nil)
	retriesDesc = prometheus.NewDesc("sluice_stage_retries_total",
		"Calls of a stage's function repeated by its Retry option.", stageLabels, nil)
	keysDesc = prometheus.NewDesc("sluice_stage_keys",
		"Keys a Keyed or Window stage holds state for.", stageLabels, nil)
	wmLagDesc = prometheus.NewDesc("sluice_window_watermark_lag_seconds",
		"How far a Window stage's watermark is behind the wall clock.", stageLabels, nil)
	openDesc = prometheus.NewDesc("sluice_window_open",
		"Windows a Window stage holds: not emitted yet, or kept for lateness.", stageLabels, nil)
	heldDesc = prometheus.NewDesc("sluice_window_held_receipts",
		"Receipts a Window stage's open windows hold, not yet handed on in a pane.", stageLabels, nil)
	idleDesc = prometheus.NewDesc("sluice_window_idle_partitions",
		"Source partitions a Window stage's watermark no longer waits for, idle longer than WindowSpec.Idle.", stageLabels, nil)
	panesDesc = prometheus.NewDesc("sluice_window_panes_total",
		"Panes a Window stage emitted, by revision: first, or update by late items.", append(stageLabels, "revision"), nil)
	lateDesc = prometheus.NewDesc("sluice_window_late_total",
		"Items later than their window's lateness, by route: the late stream, or acknowledged with no late stream set.", append(stageLabels, "route"), nil)
	queueDesc = prometheus.NewDesc("sluice_stage_queue_length",
		"Items queued on a stage's input, waiting for it.", stageLabels, nil)
	capacityDesc = prometheus.NewDesc("sluice_stage_queue_capacity",
		"Items a stage's input queue holds when full.", stageLabels, nil)
	chunkDesc = prometheus.NewDesc("sluice_stage_input_chunk_size",
		"Items a chunk of a stage's input carries now: it adapts to the stage's cost per item.", stageLabels, nil)
	busyDesc = prometheus.NewDesc("sluice_stage_busy_seconds_total",
		"Time a stage's workers spent working, summed over its workers.", stageLabels, nil)
	blockedDesc = prometheus.NewDesc("sluice_stage_blocked_seconds_total",
		"Time a stage's workers spent waiting for input or for room downstream, summed over its workers.", stageLabels, nil)
	workersDesc = prometheus.NewDesc("sluice_stage_workers",
		"Goroutines of a stage still running.", stageLabels, nil)
	throttledDesc = prometheus.NewDesc("sluice_stage_throttled_seconds_total",
		"Time a stage's workers spent waiting on its Throttle's limiter, summed over its workers.", stageLabels, nil)
	workersTargetDesc = prometheus.NewDesc("sluice_stage_workers_target",
		"Goroutines the engine chooses for a stage with sluice.Auto (exported for those stages only).", stageLabels, nil)
	workersBoundDesc = prometheus.NewDesc("sluice_stage_workers_bound",
		"The bounds given to sluice.Auto: bound=min or max.", []string{"pipeline", "stage", "bound"}, nil)
	workersChangesDesc = prometheus.NewDesc("sluice_stage_workers_changes_total",
		"Changes of a sluice.Auto stage's worker count.", stageLabels, nil)
	workersReasonDesc = prometheus.NewDesc("sluice_stage_workers_reason",
		"Always 1: why a sluice.Auto stage's worker count last changed, from a fixed set: start, grow, no-gain, latency, failing, idle, throttled, probe.",
		[]string{"pipeline", "stage", "reason"}, nil)
	workersChangedDesc = prometheus.NewDesc("sluice_stage_workers_changed_timestamp_seconds",
		"Unix time at which a sluice.Auto stage's worker count last changed (or the stage started).", stageLabels, nil)
	waitingDesc = prometheus.NewDesc("sluice_stage_workers_waiting",
		"Goroutines of a stage waiting for input or for room downstream.", stageLabels, nil)
	latencyDesc = prometheus.NewDesc("sluice_stage_latency_seconds",
		"Time from an item's hand-off to a stage's input until the stage has finished with it, sampled one chunk in eight.",
		stageLabels, nil)
	infoDesc = prometheus.NewDesc("sluice_stage_info",
		"Always 1: a stage's kind (map, batch, reduce, ...) and the overflow policy of its output.",
		[]string{"pipeline", "stage", "kind", "policy"}, nil)
	stateDesc = prometheus.NewDesc("sluice_pipeline_state",
		"1 for the pipeline's current state: running, or done (Wait has returned).",
		[]string{"pipeline", "state"}, nil)
	errorsDesc = prometheus.NewDesc("sluice_pipeline_errors_total",
		"1 once the pipeline's Wait has returned an error.", []string{"pipeline"}, nil)
)

// Describe sends the descriptors of every metric the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{itemsDesc, droppedDesc, failedDesc, retriesDesc, queueDesc, capacityDesc, chunkDesc, busyDesc,
		blockedDesc, throttledDesc, workersDesc, workersTargetDesc, workersBoundDesc, workersChangesDesc, workersReasonDesc, workersChangedDesc,
		waitingDesc, latencyDesc, infoDesc, stateDesc, errorsDesc, keysDesc, wmLagDesc, openDesc, heldDesc, idleDesc, panesDesc, lateDesc} {
		ch <- d
	}
}

// Collect takes a snapshot of every pipeline and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	pipelines := slices.Clone(c.pipelines)
	c.mu.Unlock()
	for _, p := range pipelines {
		collect(ch, p.Stats())
	}
}

func collect(ch chan<- prometheus.Metric, s sluice.Snapshot) {
	pl := s.Pipeline
	running, done := 1.0, 0.0
	if s.Done {
		running, done = 0, 1
	}
	ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, running, pl, "running")
	ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, done, pl, "done")
	failed := 0.0
	if s.Err != "" {
		failed = 1
	}
	ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, failed, pl)

	policy := make(map[string]string, len(s.Stages)) // of each stage's output
	for _, e := range s.Edges {
		if _, ok := policy[e.From]; !ok {
			policy[e.From] = e.Policy
		}
	}
	for _, st := range s.Stages {
		name := st.Name // unique within a pipeline: the core enforces it
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, pl, name)
		}
		counter := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, pl, name)
		}
		ch <- prometheus.MustNewConstMetric(infoDesc, prometheus.GaugeValue, 1, pl, name, st.Kind, policy[st.Name])
		ch <- prometheus.MustNewConstMetric(itemsDesc, prometheus.CounterValue, float64(st.In), pl, name, "in")
		ch <- prometheus.MustNewConstMetric(itemsDesc, prometheus.CounterValue, float64(st.Out), pl, name, "out")
		if reason := policy[st.Name]; reason == sluice.DropNewest.String() || reason == sluice.DropOldest.String() {
			ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(st.Dropped), pl, name, reason)
		}
		counter(failedDesc, float64(st.Failed))
		counter(retriesDesc, float64(st.Retries))
		counter(busyDesc, st.Busy.Seconds())
		counter(blockedDesc, st.Blocked.Seconds())
		counter(throttledDesc, st.Throttled.Seconds())
		gauge(workersDesc, float64(st.Running))
		if a := st.Auto; a != nil {
			gauge(workersTargetDesc, float64(st.Workers))
			ch <- prometheus.MustNewConstMetric(workersBoundDesc, prometheus.GaugeValue, float64(a.Min), pl, name, "min")
			ch <- prometheus.MustNewConstMetric(workersBoundDesc, prometheus.GaugeValue, float64(a.Max), pl, name, "max")
			counter(workersChangesDesc, float64(a.Changes))
			ch <- prometheus.MustNewConstMetric(workersReasonDesc, prometheus.GaugeValue, 1, pl, name, a.Reason.String())
			gauge(workersChangedDesc, float64(a.Changed.UnixNano())/1e9)
		}
		gauge(waitingDesc, float64(st.Waiting))
		if st.Kind == "keyed" || st.Window != nil {
			gauge(keysDesc, float64(st.Keys))
		}
		if w := st.Window; w != nil {
			if !w.Watermark.IsZero() {
				gauge(wmLagDesc, w.Lag.Seconds())
			}
			gauge(openDesc, float64(w.Open))
			gauge(heldDesc, float64(w.Held))
			gauge(idleDesc, float64(w.IdlePartitions))
			ch <- prometheus.MustNewConstMetric(panesDesc, prometheus.CounterValue, float64(w.Emitted-w.Updated), pl, name, "first")
			ch <- prometheus.MustNewConstMetric(panesDesc, prometheus.CounterValue, float64(w.Updated), pl, name, "update")
			ch <- prometheus.MustNewConstMetric(lateDesc, prometheus.CounterValue, float64(w.Late), pl, name, "stream")
			ch <- prometheus.MustNewConstMetric(lateDesc, prometheus.CounterValue, float64(w.LateDropped), pl, name, "dropped")
		}
		if st.InCapacity == 0 {
			continue // a source: no input queue, no latency
		}
		gauge(queueDesc, float64(st.InDepth))
		gauge(capacityDesc, float64(st.InCapacity))
		gauge(chunkDesc, float64(st.InChunkSize))
		count, sum, cum := buckets(st.Latency)
		ch <- prometheus.MustNewConstHistogram(latencyDesc, count, sum, cum, pl, name)
	}
}

// The exported latency histogram has one bucket per power of two of
// nanoseconds, from 2^minPow (about 1 µs) to 2^maxPow (about 34 s); the
// core's 16 buckets per power of two would make 960 series per stage.
const minPow, maxPow = 10, 35

// buckets converts a sluice latency histogram into a Prometheus one: the
// count, the sum in seconds and the cumulative count at or below each
// finite upper bound, in seconds. The core's buckets are merged into one
// per power of two: the bounds are (2^k − 1) ns for k = minPow … maxPow,
// the largest durations below 2^k ns, which are ends of core buckets, so
// every cumulative count is exact. Faster samples fall in the first
// bucket; slower ones only in the +Inf bucket that Prometheus derives from
// the count.
func buckets(h sluice.Histogram) (count uint64, sum float64, cum map[float64]uint64) {
	cum = make(map[float64]uint64, maxPow-minPow+1)
	var n uint64
	for i, c := range h.Counts {
		n += c
		if i >= len(h.Bounds) || i == len(h.Counts)-1 {
			break // the last bucket has no upper bound
		}
		b := uint64(h.Bounds[i])
		if top := b + 1; top&b == 0 && top >= 1<<minPow && top <= 1<<maxPow {
			cum[time.Duration(b).Seconds()] = n
		}
	}
	return h.Count, h.Sum.Seconds(), cum
}
