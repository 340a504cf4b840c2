package clickhousex

import (
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// writerMetrics are the metrics of a [Writer]'s [WriterStats], which every
// exporter of the core's list (prom, otelx) renders for each stage that
// inserts with the writer ([Insert], [InsertBatches]), labelled with its
// pipeline and name.
var writerMetrics = metrics.Register(
	metrics.For(metrics.Metric{Name: "sluice.clickhouse.writer.rows", Unit: "{row}", Kind: metrics.Counter,
		Help: "Rows a ClickHouse writer committed. A writer that several stages of a pipeline share reports its totals under the first."},
		func(s WriterStats, put metrics.Put) { put(float64(s.Rows)) }),
	metrics.For(metrics.Metric{Name: "sluice.clickhouse.writer.inserts", Unit: "{insert}", Kind: metrics.Counter, Labels: []string{"result"},
		Help: "Inserts of a ClickHouse writer: result=ok committed, result=failed did not (each try of a retried batch counts)."},
		func(s WriterStats, put metrics.Put) {
			put(float64(s.Batches), "ok")
			put(float64(s.Failed), "failed")
		}),
)

// attach makes the writer's counts part of the stage's figures in p's
// snapshots, and so of every exporter's series.
func (w *Writer[T]) attach(p *sluice.Pipeline, stage string) {
	p.AttachConnector(stage, w, func() any { return w.Stats() })
}
