package otelx

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// fakeStats stands for a connector's statistics: otelx cannot import a
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

func seriesKey(name string, set attribute.Set) string {
	var kv []string
	for _, a := range set.ToSlice() {
		kv = append(kv, string(a.Key)+"="+a.Value.Emit())
	}
	slices.Sort(kv)
	return name + "{" + strings.Join(kv, ",") + "}"
}

func TestMetricsExposeEverySeriesOfTheListAllAutoReasonsIncluded(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("p"))
	sluice.Collect(p, "all", sluice.FromSlice(p, "src", []int{1}))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	snap := metrics.EverySeries(p.Name())
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	m, err := NewMetrics(mp, p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close() }()
	m.stats = func(*sluice.Pipeline) sluice.Snapshot { return snap }

	want := map[string]bool{}
	metrics.Read(snap, func(x metrics.Sample) {
		kv := make([]attribute.KeyValue, 0, len(x.Labels))
		for i, n := range x.Metric.LabelNames() {
			kv = append(kv, attrKey(n).String(x.Labels[i]))
		}
		want[seriesKey(x.Metric.Name, attribute.NewSet(kv...))] = true
	})
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	reasons := map[string]bool{}
	names := map[string]bool{}
	var waited float64
	for _, sm := range rm.ScopeMetrics {
		for _, md := range sm.Metrics {
			names[md.Name] = true
			var sets []attribute.Set
			switch d := md.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes)
				}
			case metricdata.Sum[float64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes)
					if md.Name == "sluice.fake.waited" {
						waited = dp.Value
					}
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes)
				}
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes)
				}
			}
			for _, set := range sets {
				got[seriesKey(md.Name, set)] = true
				if v, ok := set.Value("sluice.reason"); ok && md.Name == "sluice.stage.workers.reason" {
					reasons[v.AsString()] = true
				}
			}
		}
	}
	if len(names) != len(metrics.List()) {
		t.Errorf("got %d metrics, want all %d of the list", len(names), len(metrics.List()))
	}
	if want := 3.0; waited != want { // EverySeries sets the third field to 3 of its unit
		t.Errorf("sluice.fake.waited: got %v s, want %v", waited, want)
	}
	for _, n := range []string{"sluice.fake.messages", "sluice.fake.waited", "sluice.fake.open"} {
		if !names[n] {
			t.Errorf("got no %s: the fake connector's metrics are not exported", n)
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
