package metrics_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// fakeStats stands for a connector's statistics: a connector module
// registers its own the same way.
type fakeStats struct {
	Sent, Lost int64
	Waited     time.Duration
	Open       int64
	Note       string // not exported: free text
	Forgotten  int64  // read by no metric, on purpose: Unread must name it
}

var fakeMetrics = metrics.Register(
	metrics.For(metrics.Metric{Name: "sluice.fake.messages", Unit: "{message}", Kind: metrics.Counter, Labels: []string{"result"},
		Help: "Messages the fake connector sent (result=sent) or lost (result=lost)."},
		func(s fakeStats, put metrics.Put) {
			put(float64(s.Sent), "sent")
			put(float64(s.Lost), "lost")
		}),
	metrics.For(metrics.Metric{Name: "sluice.fake.waited", Unit: "s", Kind: metrics.Counter,
		Help: "Time the fake connector waited."},
		func(s fakeStats, put metrics.Put) { put(s.Waited.Seconds()) }),
	metrics.For(metrics.Metric{Name: "sluice.fake.open", Unit: "{message}", Kind: metrics.Gauge,
		Help: "Messages the fake connector holds."},
		func(s fakeStats, put metrics.Put) { put(float64(s.Open)) }),
)

func TestUnreadNamesTheFieldsOfConnectorStatisticsNoMetricReads(t *testing.T) {
	if got, want := metrics.Unread[fakeStats]("Note"), []string{"Forgotten"}; !slices.Equal(got, want) {
		t.Errorf("got unread fields %v, want %v", got, want)
	}
	if got := metrics.Unread[fakeStats]("Note", "Forgotten"); len(got) != 0 {
		t.Errorf("got unread fields %v, want none once listed", got)
	}
}

func TestConnectorMetricsFollowAllInTheList(t *testing.T) {
	l := metrics.List()
	if len(l) != len(metrics.All)+len(fakeMetrics) {
		t.Fatalf("got %d metrics, want All's %d and the fake's %d", len(l), len(metrics.All), len(fakeMetrics))
	}
	for i, m := range l {
		if m.Connector() != (i >= len(metrics.All)) {
			t.Errorf("metric %d %s: Connector() = %v", i, m.Name, m.Connector())
		}
	}
	if l[len(metrics.All)].Name != "sluice.fake.messages" {
		t.Errorf("got %s after All, want sluice.fake.messages", l[len(metrics.All)].Name)
	}
}

func TestAConnectorsSeriesAreThoseOfTheStageItIsAttachedTo(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("p"))
	src := sluice.FromSlice(p, "src", []int{1, 2, 3})
	sluice.Collect(p, "store", src)
	p.AttachConnector("store", new(int), func() any { return fakeStats{Sent: 3, Lost: 1, Waited: 1500 * time.Millisecond, Open: 2} })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	var got []string
	metrics.Read(p.Stats(), func(x metrics.Sample) {
		if strings.HasPrefix(x.Metric.Name, "sluice.fake.") {
			got = append(got, fmt.Sprintf("%s %v %v %v", x.Metric.Name, x.Metric.LabelNames(), x.Labels, x.Value))
		}
	})
	want := []string{
		"sluice.fake.messages [pipeline stage result] [p store sent] 3",
		"sluice.fake.messages [pipeline stage result] [p store lost] 1",
		"sluice.fake.waited [pipeline stage] [p store] 1.5",
		"sluice.fake.open [pipeline stage] [p store] 2",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestEverySeriesHasAStageForEachConnectorType(t *testing.T) {
	names := map[string]bool{}
	metrics.Read(metrics.EverySeries("p"), func(x metrics.Sample) {
		if x.Metric.Connector() && x.Value != 0 {
			names[x.Metric.Name] = true
		}
	})
	for _, m := range fakeMetrics {
		if !names[m.Name] {
			t.Errorf("EverySeries has no non-zero sample of %s", m.Name)
		}
	}
}

func TestRegisterRefusesWhatAnExporterCouldNotShow(t *testing.T) {
	m := metrics.For(metrics.Metric{Name: "sluice.fake.late", Kind: metrics.Gauge, Help: "h"}, func(fakeStats, metrics.Put) {})
	for _, c := range []struct {
		name string
		f    func()
		want string
	}{
		{"after List", func() { metrics.List(); metrics.Register(m) }, "after the list was read"},
		{"not made by For", func() { metrics.Register(metrics.Metric{Name: "sluice.fake.bare", Kind: metrics.Gauge, Help: "h"}) }, "not made by metrics.For"},
		{"a name taken", func() { metrics.Register(fakeMetrics[1]) }, `"sluice.fake.waited" is already registered`},
		{"a core name", func() {
			metrics.Register(metrics.For(metrics.Metric{Name: "sluice.stage.items", Kind: metrics.Counter, Help: "h"}, func(fakeStats, metrics.Put) {}))
		}, "already registered"},
		{"no help", func() {
			metrics.Register(metrics.For(metrics.Metric{Name: "sluice.fake.nohelp", Kind: metrics.Counter}, func(fakeStats, metrics.Put) {}))
		}, "needs help"},
		{"per pipeline", func() { metrics.For(metrics.Metric{Name: "x", PerPipeline: true}, func(fakeStats, metrics.Put) {}) }, "PerPipeline"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := fmt.Sprint(recover()); !strings.HasPrefix(r, "metrics: ") || !strings.Contains(r, c.want) {
					t.Errorf("got panic %q, want one saying %q", r, c.want)
				}
			}()
			c.f()
		})
	}
}

func TestAttachConnectorPanicsOnAStageItDoesNotHave(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("p"))
	sluice.Collect(p, "store", sluice.FromSlice(p, "src", []int{1}))
	defer func() {
		if r := fmt.Sprint(recover()); !strings.Contains(r, `"nope"`) || !strings.HasPrefix(r, "sluice: ") {
			t.Errorf("got panic %q, want one naming the stage", r)
		}
		_ = p.Wait()
	}()
	p.AttachConnector("nope", new(int), func() any { return fakeStats{} })
}

func ExampleFor() {
	// A connector's statistics, as its Stats method returns them.
	type QueueStats struct{ Sent, Failed int64 }
	m := metrics.For(metrics.Metric{Name: "sluice.queue.messages", Unit: "{message}", Kind: metrics.Counter,
		Labels: []string{"result"}, Help: "Messages the queue stored (result=sent) or gave up on (result=failed)."},
		func(s QueueStats, put metrics.Put) {
			put(float64(s.Sent), "sent")
			put(float64(s.Failed), "failed")
		})
	// A connector module passes its metrics to metrics.Register from a
	// package-level variable; its stage constructors attach the stats.
	fmt.Println(m.Name, m.LabelNames(), m.Connector())
	// Output: sluice.queue.messages [pipeline stage result] true
}

func TestAConnectorSharedByStagesIsShownOnceUnderTheFirst(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("p"))
	a := sluice.FromSlice(p, "a", []int{1})
	b := sluice.FromSlice(p, "b", []int{2})
	sluice.Collect(p, "store-a", a)
	sluice.Collect(p, "store-b", b)
	shared, other := new(int), new(int)
	p.AttachConnector("store-a", shared, func() any { return fakeStats{Open: 1} })
	p.AttachConnector("store-b", shared, func() any { return fakeStats{Open: 1} })
	p.AttachConnector("a", other, func() any { return fakeStats{Open: 5} })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	var got []string
	metrics.Read(p.Stats(), func(x metrics.Sample) {
		if x.Metric.Name == "sluice.fake.open" {
			got = append(got, fmt.Sprint(x.Labels, x.Value))
		}
	})
	if want := []string{"[p a] 5", "[p store-a] 1"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestAttachConnectorPanicsOnAConnectorItCannotTellApart(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("p"))
	sluice.Collect(p, "store", sluice.FromSlice(p, "src", []int{1}))
	defer func() { _ = p.Wait() }()
	for _, conn := range []any{nil, []int{1}} {
		func() {
			defer func() {
				if r := fmt.Sprint(recover()); !strings.HasPrefix(r, `sluice: AttachConnector "store"`) || !strings.Contains(r, "comparable") {
					t.Errorf("connector %#v: got panic %q, want one saying it must be comparable", conn, r)
				}
			}()
			p.AttachConnector("store", conn, func() any { return fakeStats{} })
		}()
	}
}

func TestUnnamedNamesTheSeriesADocsPageLeavesOut(t *testing.T) {
	var names []string
	for _, m := range fakeMetrics {
		names = append(names, m.PrometheusName())
	}
	dir := t.TempDir()
	write := func(text string) string {
		t.Helper()
		path := dir + "/page.md"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	all := write("`" + strings.Join(names, "`, `") + "`")
	if err := metrics.Unnamed(all, "sluice.fake."); err != nil {
		t.Errorf("a page naming every series: %v", err)
	}
	some := write("`" + names[0] + "` only")
	err := metrics.Unnamed(some, "sluice.fake.")
	if err == nil || strings.Contains(err.Error(), names[0]) || !strings.Contains(err.Error(), names[1]) || !strings.Contains(err.Error(), names[2]) {
		t.Errorf("a page naming %s only: got %v, want the other two named", names[0], err)
	}
	if err := metrics.Unnamed(all, "sluice.nothing."); err == nil || !strings.Contains(err.Error(), "no metric") {
		t.Errorf("a prefix no metric has: got %v", err)
	}
	if err := metrics.Unnamed(dir+"/absent.md", "sluice.fake."); err == nil {
		t.Error("a page that does not exist: no error")
	}
}
