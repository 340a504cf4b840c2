package metrics

import (
	"time"

	"github.com/sluicehq/sluice"
)

// EverySeries returns a snapshot of a pipeline named pipeline in which
// every metric of [List] has series: a source whose output drops, a
// stage with [sluice.Auto] for each reason ([AutoReasons]), every field
// set, window figures included, and for each type of connector
// statistics registered, a stage named after the type with such
// statistics attached, every field set. An exporter's test renders it and
// checks that it shows every sample [Read] reads from it.
func EverySeries(pipeline string) sluice.Snapshot {
	s := sluice.Snapshot{Pipeline: pipeline, Done: true, Err: "failed",
		Stages: []sluice.StageStats{{Name: "src", Kind: "source", Out: 10, Running: 1}},
		Edges:  []sluice.EdgeStats{{From: "src", Policy: sluice.DropOldest.String()}}}
	for i, r := range AutoReasons() {
		s.Stages = append(s.Stages, sluice.StageStats{
			Name: "auto-" + r.String(), Kind: "map", Workers: 3 + i, Running: 4, Waiting: 2, WaitingForRoom: 1,
			In: 100, InItems: 101, Out: 90, Dropped: 5, Failed: 7, DeadLettered: 6, Retries: 8, Busy: time.Second,
			Blocked: 2 * time.Second, Throttled: 3 * time.Second, InDepth: 11, InCapacity: 12, InChunkSize: 13,
			Auto:    &sluice.AutoStats{Min: 1, Max: 9, Reason: r, Detail: "why", Changed: time.Unix(1e9, 0), Changes: 14},
			Latency: sluice.Histogram{Bounds: []time.Duration{1023, 2047, 0}, Counts: []uint64{1, 2, 3}, Count: 6, Sum: 6000},
			Keys:    15,
			Window: &sluice.WindowStats{Watermark: time.Unix(2e9, 0), Lag: 3 * time.Second, Partitions: 6, IdlePartitions: 1,
				Open: 16, Held: 17, Emitted: 18, Updated: 2, Late: 19, LateDropped: 20, Revoked: 21, RevokedItems: 22},
		})
		s.Edges = append(s.Edges, sluice.EdgeStats{From: "auto-" + r.String(), Policy: sluice.DropNewest.String()})
	}
	for _, t := range connectorTypes() {
		s.Stages = append(s.Stages, sluice.StageStats{Name: t.String(), Kind: "for-each-chunk", Connector: filled(t).Interface()})
	}
	return s
}
