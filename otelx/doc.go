// Package otelx connects sluice pipelines to OpenTelemetry: a span per
// call of a stage's function ([NewTracer]), the W3C trace context carried
// through message headers by the connectors ([W3C], [Propagator]), and the
// pipelines' counters as OpenTelemetry metrics ([NewMetrics]).
//
// Traces and metrics are turned on with a provider of each, made by the
// program (the SDK with an OTLP exporter, usually):
//
//	p := sluice.New(ctx, sluice.Named("orders"), sluice.Tracing(otelx.NewTracer(tp)))
//	m, err := otelx.NewMetrics(mp, p)
//	if err != nil {
//		return err
//	}
//	defer m.Close()
//
// and a connector continues its messages' traces with its propagation
// option given otelx.W3C().
//
// # Spans
//
// A span covers one call of a stage's function, retries included; it is
// named "<stage> <kind>" and continues the trace of the message the item
// derives from (see [sluice.Receipt.Trace]). See [NewTracer] for its kind,
// attributes, links and cost. Sampling is the TracerProvider's: with the
// SDK's ParentBased sampler, a message sampled by its producer is traced
// through every stage, and one that was not costs each stage two
// small allocations.
//
// # Metrics
//
// The metrics are those of the core's one list, [metrics.List] — the
// core's own and those of the connectors a program imports, which a stage
// reading from or writing to one carries (sluice.kafka.source.*,
// sluice.kafka.sink.*, …) — which the prom module renders too: named and with units as the list has them, each
// label the attribute sluice.<label> — sluice.pipeline, sluice.stage,
// sluice.direction, sluice.reason, sluice.bound, sluice.policy,
// sluice.state — except the stage's kind, sluice.stage.kind as on spans. A
// Prometheus exporter that turns dots into underscores and appends the unit
// and _total makes the prom module's names again; the labels keep their
// sluice_ prefix. A few of them:
//
//	sluice.stage.items              counter {item}, sluice.direction=in|out   (sluice_stage_items_total)
//	sluice.stage.busy               counter s: worker time spent working       (sluice_stage_busy_seconds_total)
//	sluice.stage.queue.length       gauge {item}: queued on the stage's input
//	sluice.stage.latency            histogram s: queueing plus processing, sampled one chunk in eight;
//	                                one bucket per power of two of nanoseconds, ~1 µs to ~34 s
//	sluice.stage.workers.reason     gauge, always 1, sluice.reason: why an Auto stage's count last changed
//	sluice.pipeline.state           gauge, 1 for the current sluice.state=running|done
//
// Whole numbers are Int64 instruments, seconds Float64 ones.
// Counters are observable counters and gauges observable gauges, read from
// [sluice.Pipeline.Stats] at each collection; sources have no queue and
// latency series. OpenTelemetry has no observable histogram, so the latency
// histogram is a synchronous one into which each collection records the
// samples taken since the previous: its bucket counts equal the core's,
// and its sum the core's within the duration of one sample per worker (see
// [Metrics]).
//
// Nothing in this package costs anything per item but the spans.
package otelx
