package prom

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// fakeStats stands for a connector's statistics: prom cannot import a
// connector, so it renders a fake one's metrics, registered as a
// connector module registers its own.
type fakeStats struct {
	Sent, Lost int64
	Waited     time.Duration
	Open       int64
}

var _ = metrics.Register(
	metrics.For(metrics.Metric{Name: "sluice.fake.messages", Unit: "{message}", Kind: metrics.Counter, Labels: []string{"result"},
		Help: "Messages the fake connector sent (result=sent) or lost (result=lost)."},
		func(s fakeStats, put metrics.Put) {
			put(float64(s.Sent), "sent")
			put(float64(s.Lost), "lost")
		}),
	metrics.For(metrics.Metric{Name: "sluice.fake.waited", Unit: "s", Kind: metrics.Counter, Help: "Time the fake connector waited."},
		func(s fakeStats, put metrics.Put) { put(s.Waited.Seconds()) }),
	metrics.For(metrics.Metric{Name: "sluice.fake.open", Unit: "{message}", Kind: metrics.Gauge, Help: "Messages the fake connector holds."},
		func(s fakeStats, put metrics.Put) { put(float64(s.Open)) }),
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
		want[x.Metric.PrometheusName()+"{"+strings.Join(ls, ",")+"}"] = true
		names[x.Metric.PrometheusName()] = true
	})
	if len(names) != len(metrics.List()) {
		t.Fatalf("the snapshot has series of %d metrics, want all %d", len(names), len(metrics.List()))
	}
	if !names["sluice_fake_messages_total"] || !names["sluice_fake_waited_seconds_total"] || !names["sluice_fake_open"] {
		t.Fatalf("the snapshot has no series of the fake connector's metrics: %v", names)
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

func TestACollectorShowsTheConnectorsAttachedToAPipelinesStages(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("orders"))
	sluice.Collect(p, "store", sluice.FromSlice(p, "in", []int{1, 2, 3}))
	p.AttachConnector("store", new(int), func() any { return fakeStats{Sent: 3, Lost: 1, Waited: 1500 * time.Millisecond, Open: 2} })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	reg := registry(t, NewCollector(p))
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sluice_fake_messages_total", []string{"pipeline=orders", "stage=store", "result=sent"}, 3},
		{"sluice_fake_messages_total", []string{"pipeline=orders", "stage=store", "result=lost"}, 1},
		{"sluice_fake_waited_seconds_total", []string{"pipeline=orders", "stage=store"}, 1.5},
		{"sluice_fake_open", []string{"pipeline=orders", "stage=store"}, 2},
	} {
		if got := value(t, reg, c.name, c.labels...); got != c.want {
			t.Errorf("%s%v: got %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := testutil.CollectAndCount(NewCollector(p), "sluice_fake_open"); n != 1 {
		t.Errorf("got %d series of sluice_fake_open, want 1: the stage without a connector has none", n)
	}
}
