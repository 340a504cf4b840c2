package metrics_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// notExported are the fields of StageStats and AutoStats that no metric
// reads, each with why.
var notExported = map[string]string{
	"StageStats.Name":    "the stage label itself",
	"StageStats.Auto":    "a pointer: its fields are checked one by one",
	"StageStats.Window":  "a pointer: its fields are checked one by one",
	"AutoStats.Detail":   "free text, not a bounded label: the log and the live page show it",
	"StageStats.Latency": "checked apart: a histogram, changed by its counts below",
	"StageStats.Connector": "a connector's statistics: its own metrics read them (metrics.For), and its tests check them with metrics.Unread " +
		"(connectors_test.go checks that on a fake connector)",
}

// full is a snapshot in which every metric has series; its stage 1 has
// Auto and every field set, and its output drops.
func full() sluice.Snapshot { return metrics.EverySeries("p") }

// readAll is every sample of s as text: "name{labels} value".
func readAll(s sluice.Snapshot) []string {
	var out []string
	metrics.Read(s, func(x metrics.Sample) {
		v := fmt.Sprint(x.Value)
		if x.Histogram != nil {
			v = fmt.Sprint(x.Histogram.Counts, x.Histogram.Count, x.Histogram.Sum)
		}
		out = append(out, fmt.Sprintf("%s%v %s", x.Metric.Name, x.Labels, v))
	})
	return out
}

// changed returns v with a value other than its own, for each kind of
// field Stats has.
func changed(v reflect.Value) {
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1000)
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Struct:
		if t, ok := v.Interface().(time.Time); ok {
			v.Set(reflect.ValueOf(t.Add(time.Hour)))
		}
	}
}

func TestEveryStatsFieldIsReadByAMetric(t *testing.T) {
	base := readAll(full())
	check := func(typ string, n int, field func(s *sluice.Snapshot, i int) reflect.Value) {
		for i := range n {
			s := full()
			f := field(&s, i)
			key := typ + "." + fieldName(typ, i)
			if _, ok := notExported[key]; ok {
				continue
			}
			changed(f)
			if slices.Equal(readAll(s), base) {
				t.Errorf("no metric reads %s: add one to metrics.All (or to notExported, saying why)", key)
			}
		}
	}
	check("StageStats", reflect.TypeFor[sluice.StageStats]().NumField(), func(s *sluice.Snapshot, i int) reflect.Value {
		return reflect.ValueOf(&s.Stages[1]).Elem().Field(i)
	})
	check("AutoStats", reflect.TypeFor[sluice.AutoStats]().NumField(), func(s *sluice.Snapshot, i int) reflect.Value {
		return reflect.ValueOf(s.Stages[1].Auto).Elem().Field(i)
	})
	check("WindowStats", reflect.TypeFor[sluice.WindowStats]().NumField(), func(s *sluice.Snapshot, i int) reflect.Value {
		return reflect.ValueOf(s.Stages[1].Window).Elem().Field(i)
	})
	s := full()
	s.Stages[1].Latency.Counts[1]++
	if slices.Equal(readAll(s), base) {
		t.Error("no metric reads StageStats.Latency")
	}
	for _, f := range []func(*sluice.Snapshot){
		func(s *sluice.Snapshot) { s.Done = !s.Done },
		func(s *sluice.Snapshot) { s.Err = map[string]string{"": "failed"}[s.Err] },
	} {
		s := full()
		f(&s)
		if slices.Equal(readAll(s), base) {
			t.Errorf("no metric reads the snapshot's Done or Err")
		}
	}
}

func fieldName(typ string, i int) string {
	switch typ {
	case "AutoStats":
		return reflect.TypeFor[sluice.AutoStats]().Field(i).Name
	case "WindowStats":
		return reflect.TypeFor[sluice.WindowStats]().Field(i).Name
	}
	return reflect.TypeFor[sluice.StageStats]().Field(i).Name
}

func TestEveryMetricHasAUniqueNameHelpAndAKind(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range metrics.List() {
		if seen[m.Name] || !strings.HasPrefix(m.Name, "sluice.") || m.Help == "" || m.Kind == 0 {
			t.Errorf("metric %q: want a unique name under sluice., help and a kind", m.Name)
		}
		seen[m.Name] = true
	}
}

func TestEveryMetricIsReadFromAFullSnapshotWithItsLabels(t *testing.T) {
	got := map[string]int{}
	metrics.Read(full(), func(x metrics.Sample) {
		if len(x.Labels) != len(x.Metric.LabelNames()) {
			t.Errorf("%s: got labels %v, want values of %v", x.Metric.Name, x.Labels, x.Metric.LabelNames())
		}
		if (x.Metric.Kind == metrics.Histogram) != (x.Histogram != nil) {
			t.Errorf("%s: a histogram sample must have a Histogram, and no other", x.Metric.Name)
		}
		got[x.Metric.Name]++
	})
	for _, m := range metrics.List() {
		if got[m.Name] == 0 {
			t.Errorf("got no sample of %s", m.Name)
		}
	}
}

func TestAutoReasonsListsEveryReason(t *testing.T) {
	var names []string
	for _, r := range metrics.AutoReasons() {
		names = append(names, r.String())
	}
	want := []string{"start", "grow", "no-gain", "latency", "failing", "idle", "throttled", "probe"}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("got reasons %v, want %s among them", names, w)
		}
	}
	var help string
	for _, m := range metrics.All {
		if m.Name == "sluice.stage.workers.reason" {
			help = m.Help
		}
	}
	for _, n := range names {
		if !strings.Contains(help, n) {
			t.Errorf("the reason metric's help %q does not name %s", help, n)
		}
	}
}

func TestASourceHasNoQueueAndAFixedStageNoAutoSeries(t *testing.T) {
	s := sluice.Snapshot{Pipeline: "p", Stages: []sluice.StageStats{{Name: "src", Kind: "source"}}}
	metrics.Read(s, func(x metrics.Sample) {
		if strings.Contains(x.Metric.Name, "queue") || strings.Contains(x.Metric.Name, "latency") ||
			strings.Contains(x.Metric.Name, "chunk") || x.Metric.Name == "sluice.stage.workers.target" ||
			strings.Contains(x.Metric.Name, "dropped") {
			t.Errorf("got %s%v for a source without Auto, whose output blocks", x.Metric.Name, x.Labels)
		}
	})
}

func TestPipelinesTellsPipelinesApartByName(t *testing.T) {
	var set metrics.Pipelines
	a := run(t, "a")
	a2 := run(t, "a")
	b := run(t, "b")
	if err := set.Add(a); err != nil {
		t.Fatal(err)
	}
	if err := set.Add(a); err != nil {
		t.Fatalf("adding again: got %v, want nil", err)
	}
	if err := set.Add(a2); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("got %v, want an error naming the pipeline a", err)
	}
	if err := set.Add(b); err != nil {
		t.Fatal(err)
	}
	if got := set.List(); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("got %v, want a then b", got)
	}
	if !set.Remove(a) || set.Remove(a) {
		t.Fatal("Remove: want true once, then false")
	}
	if err := set.Add(a2); err != nil {
		t.Fatalf("after removing a: got %v, want nil", err)
	}
	set.Clear()
	if len(set.List()) != 0 {
		t.Fatal("Clear left pipelines")
	}
	if err := set.Add(nil); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Fatalf("got %v for a nil pipeline, want an error saying so", err)
	}
}

func run(t *testing.T, name string) *sluice.Pipeline {
	t.Helper()
	p := sluice.New(context.Background(), sluice.Named(name))
	sluice.Collect(p, "all", sluice.FromSlice(p, "src", []int{1, 2}))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p
}
