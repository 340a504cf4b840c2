package kafkax

import (
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// sourceMetrics are the metrics of a [Source]'s [SourceStats], which
// every exporter of the core's list (prom, otelx) renders for the stage
// that reads the source ([Read]), labelled with its pipeline and name.
var sourceMetrics = metrics.Register(
	counter("sluice.kafka.source.records.received", "{record}",
		"Records a Kafka source emitted for the first time (a transactional source counts again those an aborted transaction delivers again).",
		func(s SourceStats) int64 { return s.Received }),
	counter("sluice.kafka.source.records.acked", "{record}",
		"Records a Kafka source saw acknowledged (dead-lettered ones included): their offsets are committed with the partition's settled prefix.",
		func(s SourceStats) int64 { return s.Acked }),
	counter("sluice.kafka.source.records.failed", "{record}",
		"Deliveries of a Kafka source's records settled with a failure: delivered again, or parked in its dead-letter topic.",
		func(s SourceStats) int64 { return s.Failed }),
	counter("sluice.kafka.source.records.redelivered", "{record}",
		"Records a Kafka source emitted again: after a failure, an aborted transaction, a restart or a rebalance.",
		func(s SourceStats) int64 { return s.Redelivered }),
	counter("sluice.kafka.source.records.skipped", "{record}",
		"Records a Kafka source did not emit because the group's last commit recorded them settled.",
		func(s SourceStats) int64 { return s.Skipped }),
	counter("sluice.kafka.source.records.parked", "{record}",
		"Records a Kafka source stored in its dead-letter topic (DeadLetterTo): the broker's dead letters, not the pipeline's.",
		func(s SourceStats) int64 { return s.Parked }),
	metrics.For(metrics.Metric{Name: "sluice.kafka.source.records.in_flight", Unit: "{record}", Kind: metrics.Gauge,
		Help: "Records a Kafka source fetched and that are not settled yet."},
		func(s SourceStats, put metrics.Put) { put(float64(s.InFlight)) }),
	metrics.For(metrics.Metric{Name: "sluice.kafka.source.commits", Unit: "{commit}", Kind: metrics.Counter, Labels: []string{"result"},
		Help: "Offset commits of a Kafka source: result=ok, or result=error for a failed one (what it held is committed by the next). A transactional source's are in sluice.kafka.source.transactions."},
		func(s SourceStats, put metrics.Put) {
			put(float64(s.Commits), "ok")
			put(float64(s.CommitErrors), "error")
		}),
	counter("sluice.kafka.source.fetch.errors", "{error}",
		"Errors a Kafka source's fetches reported (the client retries them).",
		func(s SourceStats) int64 { return s.FetchErrors }),
	counter("sluice.kafka.source.pauses", "{pause}",
		"Times a Kafka source paused fetching because MaxInFlight records were unsettled.",
		func(s SourceStats) int64 { return s.Pauses }),
	seconds("sluice.kafka.source.paused",
		"Time a Kafka source's fetching was paused (MaxInFlight records unsettled).",
		func(s SourceStats) float64 { return s.Paused.Seconds() }),
	metrics.For(metrics.Metric{Name: "sluice.kafka.source.transactions", Unit: "{transaction}", Kind: metrics.Counter, Labels: []string{"outcome"},
		Help: "Transactions of a transactional Kafka source, one per epoch: outcome=committed (its outputs and offsets) or outcome=aborted (its inputs delivered again). Zero for an at-least-once source."},
		func(s SourceStats, put metrics.Put) {
			put(float64(s.TxnCommitted), "committed")
			put(float64(s.TxnAborted), "aborted")
		}),
	seconds("sluice.kafka.source.transaction.epoch",
		"Summed length of a transactional Kafka source's committed epochs: divided by the committed transactions, the mean epoch.",
		func(s SourceStats) float64 { return s.TxnEpochTime.Seconds() }),
	seconds("sluice.kafka.source.transaction.commit",
		"Summed time a transactional Kafka source spent closing its committed epochs (the wait for what was in flight, the flush, the offsets, EndTxn): divided by the committed transactions, the mean commit latency.",
		func(s SourceStats) float64 { return s.TxnCommitTime.Seconds() }),
)

// sinkMetrics are the metrics of a [Sink]'s [SinkStats], rendered for each
// stage that writes through the sink ([Produce], [ProduceBatches]).
var sinkMetrics = metrics.Register(
	counter("sluice.kafka.sink.records.produced", "{record}",
		"Records a Kafka sink produced and the broker stored. A sink that several stages of a pipeline share reports its totals under the first.",
		func(s SinkStats) int64 { return s.Produced }),
	counter("sluice.kafka.sink.records.failed", "{record}",
		"Records a Kafka sink's producer gave up on.",
		func(s SinkStats) int64 { return s.Failed }),
)

func counter[T any](name, unit, help string, v func(T) int64) metrics.Metric {
	return metrics.For(metrics.Metric{Name: name, Unit: unit, Kind: metrics.Counter, Help: help},
		func(s T, put metrics.Put) { put(float64(v(s))) })
}

func seconds[T any](name, help string, v func(T) float64) metrics.Metric {
	return metrics.For(metrics.Metric{Name: name, Unit: "s", Kind: metrics.Counter, Help: help},
		func(s T, put metrics.Put) { put(v(s)) })
}

// attach makes the source's counts part of the stage's figures in p's
// snapshots, and so of every exporter's series.
func (s *Source) attach(p *sluice.Pipeline, stage string) {
	p.AttachConnector(stage, s, func() any { return s.Stats() })
}

// attach makes the sink's counts part of the stage's figures.
func (s *Sink) attach(p *sluice.Pipeline, stage string) {
	p.AttachConnector(stage, s, func() any { return s.Stats() })
}
