package prom

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// everySeries is a snapshot with a source, a stage whose output drops,
// and a stage with Auto for every reason, each field of each stage set.
func everySeries() sluice.Snapshot {
	s := sluice.Snapshot{Pipeline: "p", Done: true, Err: "failed",
		Stages: []sluice.StageStats{{Name: "src", Kind: "source", Out: 10, Running: 1}},
		Edges:  []sluice.EdgeStats{{From: "src", Policy: sluice.DropOldest.String()}}}
	for i, r := range metrics.AutoReasons() {
		s.Stages = append(s.Stages, sluice.StageStats{
			Name: fmt.Sprintf("auto-%s", r), Kind: "map", Workers: 3 + i, Running: 4, Waiting: 2, WaitingForRoom: 1,
			In: 100, InItems: 101, Out: 90, Failed: 7, DeadLettered: 6, Retries: 8, Busy: time.Second,
			Blocked: 2 * time.Second, Throttled: 3 * time.Second, InDepth: 11, InCapacity: 12, InChunkSize: 13,
			Auto:    &sluice.AutoStats{Min: 1, Max: 9, Reason: r, Changed: time.Unix(1e9, 0), Changes: 14},
			Latency: sluice.Histogram{Bounds: []time.Duration{1023, 2047, 0}, Counts: []uint64{1, 2, 3}, Count: 6, Sum: 6000},
		})
	}
	return s
}

// snapshotCollector collects a fixed snapshot, for tests.
type snapshotCollector struct{ s sluice.Snapshot }

func (c snapshotCollector) Describe(ch chan<- *prometheus.Desc) { (&Collector{}).Describe(ch) }
func (c snapshotCollector) Collect(ch chan<- prometheus.Metric) { collect(ch, c.s) }

func TestTheCollectorExposesEverySeriesOfTheListAllAutoReasonsIncluded(t *testing.T) {
	s := everySeries()
	want := map[string]bool{}
	names := map[string]bool{}
	metrics.Read(s, func(x metrics.Sample) {
		var ls []string
		for i, n := range x.Metric.LabelNames() {
			ls = append(ls, n+"="+x.Labels[i])
		}
		slices.Sort(ls)
		want[promName(x.Metric)+"{"+strings.Join(ls, ",")+"}"] = true
		names[promName(x.Metric)] = true
	})
	if len(names) != len(metrics.All) {
		t.Fatalf("the snapshot has series of %d metrics, want all %d", len(names), len(metrics.All))
	}
	fams, err := registry(t, snapshotCollector{s}).Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	reasons := map[string]bool{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
				if f.GetName() == "sluice_stage_workers_reason" && l.GetName() == "reason" {
					reasons[l.GetValue()] = true
				}
			}
			slices.Sort(ls)
			got[f.GetName()+"{"+strings.Join(ls, ",")+"}"] = true
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("missing series %s", k)
		}
	}
	for k := range got {
		if !want[k] {
			t.Errorf("series %s is not in the list", k)
		}
	}
	for _, r := range metrics.AutoReasons() {
		if !reasons[r.String()] {
			t.Errorf("no series has the Auto reason %s", r)
		}
	}
}
