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
// The metrics are the prom module's, named in OpenTelemetry's way: dots
// between the parts, the unit apart, no _total, and each label the
// attribute sluice.<label> — sluice.pipeline, sluice.stage,
// sluice.direction, sluice.reason, sluice.bound, sluice.policy,
// sluice.state — except the stage's kind, sluice.stage.kind as on spans. A
// Prometheus exporter that turns dots into underscores and appends the unit
// and _total makes the prom module's names again (two are shown below);
// the labels keep their sluice_ prefix.
//
//	sluice.stage.items              counter {item}, sluice.direction=in|out   (sluice_stage_items_total)
//	sluice.stage.dropped            counter {item}, sluice.reason: the overflow policy, only stages that drop
//	sluice.stage.failed             counter {item}: failed, then skipped or dead-lettered
//	sluice.stage.retries            counter {call}: calls repeated by Retry
//	sluice.stage.busy               counter s: worker time spent working       (sluice_stage_busy_seconds_total)
//	sluice.stage.blocked            counter s: worker time spent waiting
//	sluice.stage.throttled          counter s: worker time spent on the Throttle
//	sluice.stage.workers            gauge {goroutine}: still running
//	sluice.stage.workers.waiting    gauge {goroutine}: of those, waiting for input or room
//	sluice.stage.queue.length       gauge {item}: queued on the stage's input
//	sluice.stage.queue.capacity     gauge {item}: what that input holds when full
//	sluice.stage.input.chunk_size   gauge {item}: items a chunk of that input carries now
//	sluice.stage.latency            histogram s: queueing plus processing, sampled one chunk in eight;
//	                                one bucket per power of two of nanoseconds, ~1 µs to ~34 s
//	sluice.stage.info               gauge, always 1, sluice.stage.kind and sluice.policy
//	sluice.pipeline.state           gauge, 1 for the current sluice.state=running|done
//	sluice.pipeline.errors          counter {error}: 1 once Wait returned an error
//
// for sluice.Keyed and sluice.Window stages sluice.stage.keys (gauge
// {key}), and for sluice.Window stages sluice.window.watermark.lag (gauge
// s), sluice.window.open, sluice.window.held_receipts,
// sluice.window.idle_partitions (gauges), sluice.window.panes (counter,
// sluice.revision=first|update) and sluice.window.late (counter,
// sluice.route=stream|dropped);
//
// and for stages with sluice.Auto:
//
//	sluice.stage.workers.target                gauge {goroutine}: the count the engine chooses now
//	sluice.stage.workers.bound                 gauge {goroutine}, sluice.bound=min|max
//	sluice.stage.workers.changes               counter {change}
//	sluice.stage.workers.reason                gauge, always 1, sluice.reason: why the count last changed
//	sluice.stage.workers.changed_timestamp     gauge s: when it last changed (Unix time)
//
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
