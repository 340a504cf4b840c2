package natsx

import (
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// sourceMetrics are the metrics of a [Source]'s [SourceStats], which
// every exporter of the core's list (prom, otelx) renders for the stage
// that reads the source ([Read]), labelled with its pipeline and name.
var sourceMetrics = metrics.Register(
	counter("sluice.nats.source.messages.received", "{message}",
		"Messages a NATS source fetched (emitted, or handed back at a stop).",
		func(s SourceStats) int64 { return s.Received }),
	counter("sluice.nats.source.messages.acked", "{message}",
		"Messages a NATS source acknowledged: settled without a cause.",
		func(s SourceStats) int64 { return s.Acked }),
	counter("sluice.nats.source.messages.failed", "{message}",
		"Messages settled with a cause (Receipt.Fail) at a NATS source.",
		func(s SourceStats) int64 { return s.Failed }),
	counter("sluice.nats.source.messages.redelivered", "{message}",
		"Messages a NATS source received that the server had delivered before: failed ones, and those a process took and never settled.",
		func(s SourceStats) int64 { return s.Redelivered }),
	counter("sluice.nats.source.messages.requeued", "{message}",
		"Failed messages a NATS source negatively acknowledged, to be delivered again after its Redeliver delay.",
		func(s SourceStats) int64 { return s.Requeued }),
	counter("sluice.nats.source.messages.parked", "{message}",
		"Messages a NATS source published to its DeadLetterTo subject: the broker's dead letters, not the pipeline's.",
		func(s SourceStats) int64 { return s.Parked }),
	metrics.For(metrics.Metric{Name: "sluice.nats.source.messages.in_flight", Unit: "{message}", Kind: metrics.Gauge,
		Help: "Messages a NATS source emitted and that are not settled yet."},
		func(s SourceStats, put metrics.Put) { put(float64(s.InFlight)) }),
	counter("sluice.nats.source.messages.termed", "{message}",
		"Messages a NATS source terminated after dead-lettering them: never delivered again.",
		func(s SourceStats) int64 { return s.Termed }),
	counter("sluice.nats.source.messages.handed_back", "{message}",
		"Messages a NATS source received but did not emit when its run stopped: negatively acknowledged at once.",
		func(s SourceStats) int64 { return s.HandedBack }),
	counter("sluice.nats.source.messages.gave_up", "{message}",
		"Messages the server stopped delivering (MaxDeliver reached) whose advisories a NATS source resolved.",
		func(s SourceStats) int64 { return s.GaveUp }),
	counter("sluice.nats.source.fetch.errors", "{error}",
		"Errors a NATS source's consumer reported and recovered from (missed heartbeats, reconnects).",
		func(s SourceStats) int64 { return s.FetchErrors }),
	counter("sluice.nats.source.settle.errors", "{error}",
		"Acknowledgements, naks and terms a NATS source could not send, and its failed dead-letter publishes.",
		func(s SourceStats) int64 { return s.SettleErrors }),
)

// sinkMetrics are the metrics of a [Sink]'s [SinkStats], rendered for each
// stage that writes through the sink ([Publish], [PublishBatches]).
var sinkMetrics = metrics.Register(
	counter("sluice.nats.sink.messages.published", "{message}",
		"Messages a NATS sink published and the server stored (or recognised as duplicates). A sink that several stages of a pipeline share reports its totals under the first.",
		func(s SinkStats) int64 { return s.Published }),
	counter("sluice.nats.sink.messages.failed", "{message}",
		"Messages a NATS sink's writes did not store: rejected, refused or unanswered.",
		func(s SinkStats) int64 { return s.Failed }),
	counter("sluice.nats.sink.messages.rejected", "{message}",
		"Of the messages a NATS sink did not store, those the server rejected or the client refused.",
		func(s SinkStats) int64 { return s.Rejected }),
)

func counter[T any](name, unit, help string, v func(T) int64) metrics.Metric {
	return metrics.For(metrics.Metric{Name: name, Unit: unit, Kind: metrics.Counter, Help: help},
		func(s T, put metrics.Put) { put(float64(v(s))) })
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
