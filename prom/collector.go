// Package prom exports the counters of running sluice pipelines as
// Prometheus metrics, through a [prometheus.Collector] that reads
// [sluice.Pipeline.Stats] at every scrape.
//
//	c := prom.NewCollector(p)
//	prometheus.MustRegister(c)
//	http.Handle("/metrics", promhttp.Handler())
//
// The metrics are those of the core's one list, [metrics.All] (each
// with its help and labels there), under Prometheus's names: dots become
// underscores, "_seconds" follows a metric in seconds and "_total" a
// counter. Every series is labelled with the pipeline's name (see
// [sluice.Named]) and, for stage series, the stage's name:
//
//	sluice_stage_items_total{pipeline,stage,direction="in"|"out"}  counter
//	sluice_stage_busy_seconds_total{pipeline,stage}                 counter: worker time spent working
//	sluice_stage_queue_length{pipeline,stage}                       gauge: items queued on the stage's input
//	sluice_stage_workers_reason{pipeline,stage,reason}              gauge, always 1: why an Auto stage's
//	                                                                worker count last changed, from a fixed set
//	sluice_stage_latency_seconds{pipeline,stage}                    histogram: one bucket per power of two of
//	                                                                nanoseconds, ~1 µs to ~34 s
//	sluice_pipeline_state{pipeline,state="running"|"done"}          gauge, 1 for the current state
//
// and so on for every entry of the list. A stage that reads from or
// writes to a broker connector (kafkax.Read, kafkax.Produce, natsx.Read,
// clickhousex.Insert, …) has the connector's series too, with the same
// pipeline and stage labels: the connector attaches its statistics to the
// stage, so a pipeline added to the Collector brings its connectors'
// series with it:
//
//	sluice_kafka_source_records_received_total{pipeline,stage}            counter
//	sluice_kafka_source_transactions_total{pipeline,stage,outcome}        counter: committed or aborted
//	sluice_kafka_source_transaction_epoch_seconds_total{pipeline,stage}  counter: summed epoch length
//
// (docs/observability.md lists them all).
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
// few atomic loads per worker and edge) and about 50 samples per stage.
package prom

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// Collector is a [prometheus.Collector] for a set of pipelines that can
// change while it is registered. Make one with [NewCollector]; the zero
// Collector is not usable. Its methods are safe for concurrent use.
type Collector struct {
	pipelines metrics.Pipelines
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
	if err := c.pipelines.Add(p); err != nil {
		panic("prom: " + err.Error())
	}
}

// Remove stops exporting p; its series disappear from the next scrape.
// Removing a pipeline that is not exported does nothing.
func (c *Collector) Remove(p *sluice.Pipeline) { c.pipelines.Remove(p) }

// descs are the descriptors of metrics.List(): the core's and the
// registered connectors'. Made at the first Describe or Collect, once the
// connector packages that register metrics are initialised.
var descs = sync.OnceValue(func() map[*metrics.Metric]*prometheus.Desc {
	l := metrics.List()
	d := make(map[*metrics.Metric]*prometheus.Desc, len(l))
	for _, m := range l {
		d[m] = prometheus.NewDesc(m.PrometheusName(), m.Help, m.LabelNames(), nil)
	}
	return d
})

// Describe sends the descriptors of every metric the collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	d := descs()
	for _, m := range metrics.List() {
		ch <- d[m]
	}
}

// Collect takes a snapshot of every pipeline and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.pipelines.List() {
		collect(ch, p.Stats())
	}
}

func collect(ch chan<- prometheus.Metric, s sluice.Snapshot) {
	all := descs()
	metrics.Read(s, func(x metrics.Sample) {
		d := all[x.Metric]
		switch x.Metric.Kind {
		case metrics.Counter:
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, x.Value, x.Labels...)
		case metrics.Gauge:
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, x.Value, x.Labels...)
		case metrics.Histogram:
			count, sum, cum := buckets(*x.Histogram)
			ch <- prometheus.MustNewConstHistogram(d, count, sum, cum, x.Labels...)
		}
	})
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
