package prom

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// snapshotCollector collects a fixed snapshot, for tests.
type snapshotCollector struct{ s sluice.Snapshot }

func (c snapshotCollector) Describe(ch chan<- *prometheus.Desc) { (&Collector{}).Describe(ch) }
func (c snapshotCollector) Collect(ch chan<- prometheus.Metric) { collect(ch, c.s) }

func TestTheCollectorExposesEverySeriesOfTheListAllAutoReasonsIncluded(t *testing.T) {
	s := metrics.EverySeries("p")
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
