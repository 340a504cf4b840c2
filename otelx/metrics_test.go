package otelx_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/otelx"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// point is one exported series.
type point struct {
	instrument string // counter (a monotonic cumulative sum), gauge or histogram
	unit       string
	value      float64
	hist       metricdata.HistogramDataPoint[float64]
}

// series maps a metric's name and its attributes, written as
// "name{k=v,k=v}" with the keys sorted, to its point.
type series map[string]point

func key(name string, set attribute.Set) string {
	var kv []string
	for _, a := range set.ToSlice() {
		kv = append(kv, string(a.Key)+"="+a.Value.Emit())
	}
	slices.Sort(kv)
	return name + "{" + strings.Join(kv, ",") + "}"
}

// at returns the series name{kv…}; kv as "k=v", in any order.
func (s series) at(t *testing.T, name string, kv ...string) point {
	t.Helper()
	slices.Sort(kv)
	k := name + "{" + strings.Join(kv, ",") + "}"
	p, ok := s[k]
	if !ok {
		t.Fatalf("no series %s", k)
	}
	return p
}

func (s series) has(name string, kv ...string) bool {
	slices.Sort(kv)
	_, ok := s[name+"{"+strings.Join(kv, ",")+"}"]
	return ok
}

func gather(t *testing.T, r sdkmetric.Reader) series {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	s := series{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelx.ScopeName {
			t.Fatalf("got scope %q, want %q", sm.Scope.Name, otelx.ScopeName)
		}
		for _, m := range sm.Metrics {
			add := func(set attribute.Set, p point) {
				p.unit = m.Unit
				k := key(m.Name, set)
				if _, dup := s[k]; dup {
					t.Fatalf("series %s exported twice", k)
				}
				s[k] = p
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes, point{instrument: sumKind(d.IsMonotonic, d.Temporality), value: float64(dp.Value)})
				}
			case metricdata.Sum[float64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes, point{instrument: sumKind(d.IsMonotonic, d.Temporality), value: dp.Value})
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes, point{instrument: "gauge", value: float64(dp.Value)})
				}
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes, point{instrument: "gauge", value: dp.Value})
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes, point{instrument: "histogram", value: float64(dp.Count), hist: dp})
				}
			default:
				t.Fatalf("metric %s has unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return s
}

func sumKind(monotonic bool, tp metricdata.Temporality) string {
	if monotonic && tp == metricdata.CumulativeTemporality {
		return "counter"
	}
	return fmt.Sprintf("sum (monotonic %v, %v)", monotonic, tp)
}

// reader returns a manual reader of a fresh MeterProvider and the provider.
func reader(t *testing.T) (*sdkmetric.ManualReader, *sdkmetric.MeterProvider) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() {
		if err := mp.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return r, mp
}

func metrics(t *testing.T, mp *sdkmetric.MeterProvider, ps ...*sluice.Pipeline) *otelx.Metrics {
	t.Helper()
	m, err := otelx.NewMetrics(mp, ps...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m
}

// orders runs a pipeline to completion: n numbers priced by 2 workers
// (every 100th fails twice, then succeeds; every 1000th fails for good and
// is skipped), then stored.
func orders(t testing.TB, name string, n int) *sluice.Pipeline {
	t.Helper()
	p := sluice.New(context.Background(), sluice.Named(name))
	src := sluice.FromSlice(p, "orders", make([]int, n), sluice.Chunk(256))
	var mu sync.Mutex
	tries := map[int]int{}
	i := 0
	numbered := sluice.Map(p, "number", src, 1, func(context.Context, int) (int, error) { i++; return i, nil }, sluice.Chunk(256))
	priced := sluice.Map(p, "price", numbered, 2, func(_ context.Context, v int) (int, error) {
		switch {
		case v%1000 == 0:
			return 0, errors.New("no price")
		case v%100 == 0:
			mu.Lock()
			defer mu.Unlock()
			if tries[v]++; tries[v] < 3 {
				return 0, errors.New("price service busy")
			}
		}
		return v, nil
	}, sluice.Chunk(256), sluice.SkipErrors(), sluice.Retry(3, 0, 0))
	sluice.Collect(p, "store", priced)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every counter and gauge of a finished pipeline equals its Stats.
func TestMetricsEqualTheStatsOfAFinishedPipeline(t *testing.T) {
	p := orders(t, "orders", 10_000)
	r, mp := reader(t)
	metrics(t, mp, p)
	s := gather(t, r)
	snap := p.Stats()

	pl := "sluice.pipeline=orders"
	for _, c := range []struct {
		name, instrument, unit string
		want                   float64
		kv                     []string
	}{
		{"sluice.pipeline.state", "gauge", "", 1, []string{"sluice.state=done"}},
		{"sluice.pipeline.state", "gauge", "", 0, []string{"sluice.state=running"}},
		{"sluice.pipeline.errors", "counter", "{error}", 0, nil},
		// The numbers the pipeline's functions make, known without Stats.
		{"sluice.stage.items", "counter", "{item}", 10_000, []string{"sluice.stage=price", "sluice.direction=in"}},
		{"sluice.stage.items", "counter", "{item}", 9_990, []string{"sluice.stage=price", "sluice.direction=out"}},
		{"sluice.stage.failed", "counter", "{item}", 10, []string{"sluice.stage=price"}},
		{"sluice.stage.retries", "counter", "{call}", 90*2 + 10*2, []string{"sluice.stage=price"}},
		{"sluice.stage.info", "gauge", "", 1, []string{"sluice.stage=price", "sluice.stage.kind=map", "sluice.policy=block"}},
	} {
		got := s.at(t, c.name, append(c.kv, pl)...)
		if got.value != c.want || got.instrument != c.instrument || got.unit != c.unit {
			t.Errorf("%s%v: got %v (%s, unit %q), want %v (%s, unit %q)", c.name, c.kv, got.value, got.instrument, got.unit,
				c.want, c.instrument, c.unit)
		}
	}

	policy := map[string]string{} // of each stage's output; a sink has none
	for _, e := range snap.Edges {
		policy[e.From] = e.Policy
	}
	for _, st := range snap.Stages {
		stage := "sluice.stage=" + st.Name
		for _, c := range []struct {
			name, instrument, unit string
			want                   float64
			kv                     []string
		}{
			{"sluice.stage.items", "counter", "{item}", float64(st.In), []string{"sluice.direction=in"}},
			{"sluice.stage.items", "counter", "{item}", float64(st.Out), []string{"sluice.direction=out"}},
			{"sluice.stage.failed", "counter", "{item}", float64(st.Failed), nil},
			{"sluice.stage.retries", "counter", "{call}", float64(st.Retries), nil},
			{"sluice.stage.busy", "counter", "s", st.Busy.Seconds(), nil},
			{"sluice.stage.blocked", "counter", "s", st.Blocked.Seconds(), nil},
			{"sluice.stage.throttled", "counter", "s", st.Throttled.Seconds(), nil},
			{"sluice.stage.workers", "gauge", "{goroutine}", float64(st.Running), nil},
			{"sluice.stage.workers.waiting", "gauge", "{goroutine}", float64(st.Waiting), nil},
			{"sluice.stage.workers.waiting_for_room", "gauge", "{goroutine}", float64(st.WaitingForRoom), nil},
			{"sluice.stage.input.items", "counter", "{item}", float64(st.InItems), nil},
			{"sluice.stage.dead_lettered", "counter", "{item}", float64(st.DeadLettered), nil},
			{"sluice.stage.keys", "gauge", "{key}", float64(st.Keys), nil},
			{"sluice.stage.info", "gauge", "", 1, []string{"sluice.stage.kind=" + st.Kind, "sluice.policy=" + policy[st.Name]}},
		} {
			got := s.at(t, c.name, append(c.kv, pl, stage)...)
			if got.value != c.want || got.instrument != c.instrument || got.unit != c.unit {
				t.Errorf("%s{%s %v}: got %v (%s, unit %q), want %v (%s, unit %q)", c.name, st.Name, c.kv, got.value, got.instrument,
					got.unit, c.want, c.instrument, c.unit)
			}
		}
		if st.InCapacity == 0 { // the source
			for _, name := range []string{"sluice.stage.queue.length", "sluice.stage.queue.capacity", "sluice.stage.input.chunk_size", "sluice.stage.latency"} {
				if s.has(name, pl, stage) {
					t.Errorf("source %s has a series %s, want none", st.Name, name)
				}
			}
			continue
		}
		for _, c := range []struct {
			name string
			want float64
		}{
			{"sluice.stage.queue.length", float64(st.InDepth)},
			{"sluice.stage.queue.capacity", float64(st.InCapacity)},
			{"sluice.stage.input.chunk_size", float64(st.InChunkSize)},
		} {
			if got := s.at(t, c.name, pl, stage); got.value != c.want || got.instrument != "gauge" || got.unit != "{item}" {
				t.Errorf("%s{%s}: got %v (%s, unit %q), want %v (gauge, unit {item})", c.name, st.Name, got.value, got.instrument, got.unit, c.want)
			}
		}
		if got := s.at(t, "sluice.stage.latency", pl, stage); got.instrument != "histogram" || got.unit != "s" || uint64(got.value) != st.Latency.Count {
			t.Errorf("sluice.stage.latency{%s}: got %v samples (%s, unit %q), want the core's %d (histogram, unit s)", st.Name, got.value,
				got.instrument, got.unit, st.Latency.Count)
		}
	}
	// Nothing else: 3 pipeline series; per stage 14 (+4 with an input)
	// and no drop, Auto or window series, as no stage drops, has Auto or
	// is a Window.
	if want := 3 + 4*14 + 3*4; len(s) != want {
		t.Errorf("got %d series, want %d:\n%s", len(s), want, strings.Join(slices.Sorted(mapsKeys(s)), "\n"))
	}
}

func mapsKeys(s series) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range s {
			if !yield(k) {
				return
			}
		}
	}
}

// The latency histogram has the prom module's buckets, one per power of
// two of nanoseconds, and counts exactly the core's samples in each; its
// sum is the core's within a nanosecond per sample. Collecting again adds
// nothing, and a second reader sees the same.
func TestLatencyHistogramEqualsTheCoresSamples(t *testing.T) {
	// 256 items a chunk, one chunk in 8 sampled: 200k items give ~97
	// samples per stage.
	p := orders(t, "latency", 200_000)
	r1 := sdkmetric.NewManualReader()
	r2 := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r1), sdkmetric.WithReader(r2))
	defer mp.Shutdown(context.Background())
	metrics(t, mp, p)
	st := p.Stats().Stages[2] // price
	if st.Name != "price" || st.Latency.Count == 0 {
		t.Fatalf("got stage %q with %d latency samples, want price with some", st.Name, st.Latency.Count)
	}
	var bounds []float64
	for k := 10; k <= 35; k++ {
		bounds = append(bounds, time.Duration(1<<k-1).Seconds())
	}
	for round, r := range []sdkmetric.Reader{r1, r1, r2, r1} {
		h := gather(t, r).at(t, "sluice.stage.latency", "sluice.pipeline=latency", "sluice.stage=price").hist
		if !slices.Equal(h.Bounds, bounds) {
			t.Fatalf("got bounds %v, want (2^k − 1) ns for k = 10 … 35: %v", h.Bounds, bounds)
		}
		if h.Count != st.Latency.Count || math.Abs(h.Sum-st.Latency.Sum.Seconds()) > float64(h.Count)*1e-9 {
			t.Fatalf("collection %d: got count %d, sum %v; want the core's %d and %v (± 1 ns a sample)", round, h.Count, h.Sum,
				st.Latency.Count, st.Latency.Sum.Seconds())
		}
		if want := bucketsOf(st.Latency); !slices.Equal(h.BucketCounts, want) {
			t.Fatalf("collection %d: got bucket counts %v, want the core's %v", round, h.BucketCounts, want)
		}
	}
}

// bucketsOf returns the counts of the exported buckets that the core's
// histogram h makes: bucket j < 26 counts its samples at or below
// (2^(j+10) − 1) ns and above the bound before; bucket 26 those above.
func bucketsOf(h sluice.Histogram) []uint64 {
	var bounds []float64
	for k := 10; k <= 35; k++ {
		bounds = append(bounds, time.Duration(1<<k-1).Seconds())
	}
	want := make([]uint64, len(bounds)+1)
	for i, c := range h.Counts {
		j := len(bounds)
		if i < len(h.Counts)-1 {
			j, _ = slices.BinarySearch(bounds, h.Bounds[i].Seconds())
		}
		want[j] += c
	}
	return want
}

func TestMetricsCountDropsByTheirReason(t *testing.T) {
	for _, policy := range []sluice.Overflow{sluice.DropNewest, sluice.DropOldest} {
		gate := make(chan struct{})
		p := sluice.New(context.Background(), sluice.Named("lossy"))
		src := sluice.FromSlice(p, "ticks", make([]int, 10_000), sluice.Buffer(64), sluice.Chunk(16), sluice.OnFull(policy))
		sluice.ForEach(p, "slow", src, 1, func(context.Context, int) error {
			<-gate
			return nil
		})
		deadline := time.Now().Add(10 * time.Second)
		for p.Stats().Stages[0].Running != 0 {
			if time.Now().After(deadline) {
				t.Fatal("gave up after 10 s waiting until the source has sent everything")
			}
			time.Sleep(5 * time.Millisecond)
		}
		r, mp := reader(t)
		metrics(t, mp, p)
		dropped := p.Stats().Stages[0].Dropped
		got := gather(t, r).at(t, "sluice.stage.dropped", "sluice.pipeline=lossy", "sluice.stage=ticks", "sluice.reason="+policy.String())
		close(gate)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if dropped == 0 || got.value != float64(dropped) || got.instrument != "counter" {
			t.Fatalf("%v: got sluice.stage.dropped %v (%s), want the stage's %d drops (> 0), a counter", policy, got.value, got.instrument, dropped)
		}
	}
}

func TestMetricsCountTheErrorOfAFailedPipeline(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("failing"))
	sluice.ForEach(p, "check", sluice.FromSlice(p, "in", []int{1, 2, 3}), 1, func(_ context.Context, v int) error {
		if v == 2 {
			return errors.New("bad item")
		}
		return nil
	})
	if err := p.Wait(); err == nil {
		t.Fatal("got no error from the pipeline, want one")
	}
	r, mp := reader(t)
	metrics(t, mp, p)
	s := gather(t, r)
	if got := s.at(t, "sluice.pipeline.errors", "sluice.pipeline=failing").value; got != 1 {
		t.Fatalf("got sluice.pipeline.errors %v, want 1", got)
	}
}

type sleepy time.Duration

func (d sleepy) Wait(ctx context.Context) error {
	select {
	case <-time.After(time.Duration(d)):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestMetricsExportAutoWorkersAndThrottledTime(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("auto"))
	out := sluice.Map(p, "fetch", sluice.FromSlice(p, "in", make([]int, 100)), 3, func(_ context.Context, v int) (int, error) { return v, nil },
		sluice.Auto(2, 16), sluice.Throttle(sleepy(time.Millisecond)))
	sluice.Collect(p, "store", out)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	r, mp := reader(t)
	metrics(t, mp, p)
	s := gather(t, r)
	st := p.Stats().Stages[1]
	a := st.Auto
	if st.Name != "fetch" || a == nil {
		t.Fatalf("got stage %q with Auto stats %v, want fetch with some", st.Name, a)
	}
	at := func(name string, kv ...string) point {
		return s.at(t, name, append(kv, "sluice.pipeline=auto", "sluice.stage=fetch")...)
	}
	for _, c := range []struct {
		got  point
		want float64
		what string
	}{
		{at("sluice.stage.workers.bound", "sluice.bound=min"), 2, "gauge"},
		{at("sluice.stage.workers.bound", "sluice.bound=max"), 16, "gauge"},
		{at("sluice.stage.workers.target"), float64(st.Workers), "gauge"},
		{at("sluice.stage.workers.changes"), float64(a.Changes), "counter"},
		{at("sluice.stage.workers.reason", "sluice.reason="+a.Reason.String()), 1, "gauge"},
		{at("sluice.stage.workers.changed_timestamp"), float64(a.Changed.UnixNano()) / 1e9, "gauge"},
		{at("sluice.stage.throttled"), st.Throttled.Seconds(), "counter"},
	} {
		if c.got.value != c.want || c.got.instrument != c.what {
			t.Errorf("got %v (%s), want %v (%s)", c.got.value, c.got.instrument, c.want, c.what)
		}
	}
	if st.Throttled < 90*time.Millisecond {
		t.Errorf("got %v throttled, want about 100 waits of 1 ms", st.Throttled)
	}
	if s.has("sluice.stage.workers.target", "sluice.pipeline=auto", "sluice.stage=store") {
		t.Error("got sluice.stage.workers.target for a stage without Auto, want none")
	}
}

// While a pipeline runs, no counter falls from one collection to the next,
// and the latency histogram ends with exactly the core's samples in each
// bucket and the core's sum, within the duration of a sample per worker
// (a collection may read a sample's count without its duration).
func TestMetricsOfARunningPipelineNeverFall(t *testing.T) {
	release := make(chan struct{})
	p := sluice.New(context.Background(), sluice.Named("live"))
	src := sluice.FromSlice(p, "in", make([]int, 1_000_000), sluice.Chunk(64))
	sluice.ForEach(p, "sink", sluice.Map(p, "work", src, 2, func(_ context.Context, v int) (int, error) {
		<-release // closed below: the pipeline runs while we collect
		return v, nil
	}), 1, func(context.Context, int) error { return nil })
	r, mp := reader(t)
	metrics(t, mp, p)
	prev := series{}
	check := func(s series) {
		for k, p := range s {
			if q, ok := prev[k]; ok && p.instrument != "gauge" && p.value < q.value {
				t.Fatalf("%s fell from %v to %v", k, q.value, p.value)
			}
		}
		prev = s
	}
	check(gather(t, r))
	close(release)
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	for collecting := true; collecting; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			collecting = false
		case <-time.After(2 * time.Millisecond):
			check(gather(t, r))
		}
	}
	s := gather(t, r)
	check(s)
	for _, st := range p.Stats().Stages[1:] {
		h := s.at(t, "sluice.stage.latency", "sluice.pipeline=live", "sluice.stage="+st.Name).hist
		var largest time.Duration // the upper bound of the largest sample's bucket
		for i, c := range st.Latency.Counts[:len(st.Latency.Counts)-1] {
			if c > 0 {
				largest = st.Latency.Bounds[i]
			}
		}
		tolerance := time.Duration(st.Workers)*largest + time.Duration(h.Count)
		if h.Count != st.Latency.Count || math.Abs(h.Sum-st.Latency.Sum.Seconds()) > tolerance.Seconds() {
			t.Errorf("%s: got latency count %d sum %v after collections during the run, want the core's %d and %v ± %v",
				st.Name, h.Count, h.Sum, st.Latency.Count, st.Latency.Sum.Seconds(), tolerance)
		}
		if want := bucketsOf(st.Latency); !slices.Equal(h.BucketCounts, want) {
			t.Errorf("%s: got bucket counts %v, want the core's %v", st.Name, h.BucketCounts, want)
		}
	}
}

func TestAddRemoveAndCloseChangeWhatIsObserved(t *testing.T) {
	a, b := orders(t, "a", 10), orders(t, "b", 10)
	r, mp := reader(t)
	m := metrics(t, mp, a)
	names := func() []string {
		var ps []string
		for k := range gather(t, r) {
			if strings.HasPrefix(k, "sluice.pipeline.errors{") {
				ps = append(ps, k)
			}
		}
		slices.Sort(ps)
		return ps
	}
	check := func(what string, want ...string) {
		t.Helper()
		if got := names(); !slices.Equal(got, want) {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
	check("one pipeline", "sluice.pipeline.errors{sluice.pipeline=a}")
	m.Add(b)
	m.Add(b)
	check("two", "sluice.pipeline.errors{sluice.pipeline=a}", "sluice.pipeline.errors{sluice.pipeline=b}")
	m.Remove(a)
	check("a removed", "sluice.pipeline.errors{sluice.pipeline=b}")
	a2 := orders(t, "a", 5)
	m.Add(a2) // a rerun under the old name, now that the old one is gone
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	check("closed")
	if err := m.Close(); err != nil {
		t.Fatalf("got %v closing again, want nil", err)
	}
}

func TestMetricsPanicOnProgrammerError(t *testing.T) {
	_, mp := reader(t)
	m := metrics(t, mp, orders(t, "x", 1))
	for _, c := range []struct {
		name, want string
		f          func()
	}{
		{"nil pipeline", "otelx: Add called with a nil", func() { m.Add(nil) }},
		{"name taken", `otelx: a pipeline named "x" is already exported`, func() { m.Add(orders(t, "x", 1)) }},
		{"nil provider", "otelx: NewMetrics called with a nil MeterProvider", func() { _, _ = otelx.NewMetrics(nil) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
					t.Fatalf("got panic %v, want one containing %q", r, c.want)
				}
			}()
			c.f()
		})
	}
}

// A Window stage's panes, late items and keys are exported.
func TestMetricsOfAWindowStage(t *testing.T) {
	type ev struct {
		k  string
		at time.Time
	}
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p := sluice.New(context.Background(), sluice.Named("win"))
	evs := []ev{{"a", at(100)}, {"b", at(200)}, {"a", at(1500)}, {"a", at(900)}, {"a", at(3000)}, {"b", at(10)}}
	w := sluice.Window(p, "count", sluice.FromSlice(p, "in", evs), 2, sluice.WindowSpec[ev, string, int]{
		Windows:  sluice.Tumbling(time.Second),
		Key:      func(e ev) string { return e.k },
		Time:     func(e ev) time.Time { return e.at },
		Fold:     func(n *int, _ ev) { *n++ },
		Lateness: time.Second,
	})
	sluice.Collect(p, "store", w)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	r, mp := reader(t)
	metrics(t, mp, p)
	s := gather(t, r)
	for _, c := range []struct {
		name string
		want float64
		kv   []string
	}{
		{"sluice.window.panes", 4, []string{"sluice.revision=first"}},
		{"sluice.window.panes", 1, []string{"sluice.revision=update"}},
		{"sluice.window.late", 1, []string{"sluice.route=dropped"}},
		{"sluice.window.open", 0, nil},
		{"sluice.stage.keys", 0, nil},
	} {
		kv := append([]string{"sluice.pipeline=win", "sluice.stage=count"}, c.kv...)
		if got := s.at(t, c.name, kv...); got.value != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.kv, got.value, c.want)
		}
	}
}
