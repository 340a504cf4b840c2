package prom

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/sluicehq/sluice"
	"go.uber.org/goleak"
)

// Every test in this package must leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// orders runs a pipeline to completion: n numbers priced by 2 workers,
// then stored.
func orders(t *testing.T, name string, n int) *sluice.Pipeline {
	t.Helper()
	p := sluice.New(context.Background(), sluice.Named(name))
	// Fixed chunks, so that queue capacities do not depend on timing.
	src := sluice.FromSlice(p, "orders", make([]int, n), sluice.Chunk(256))
	priced := sluice.Map(p, "price", src, 2, func(_ context.Context, v int) (int, error) { return v + 1, nil }, sluice.Chunk(256))
	sluice.Collect(p, "store", priced)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p
}

// registry registers c on a pedantic registry, which also checks that what
// Collect sends matches what Describe promised.
func registry(t *testing.T, c prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	return reg
}

func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after 10 s waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// value returns the value of the one gathered series of the family name
// whose labels include want (as name=value pairs).
func value(t *testing.T, reg prometheus.Gatherer, name string, want ...string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var have []string
			for _, l := range m.GetLabel() {
				have = append(have, l.GetName()+"="+l.GetValue())
			}
			if !containsAll(have, want) {
				continue
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	t.Fatalf("no series %s{%s}", name, strings.Join(want, ","))
	return 0
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func TestCollectorExportsEveryCountOfAFinishedPipeline(t *testing.T) {
	reg := registry(t, NewCollector(orders(t, "orders", 1000)))
	want := `
# HELP sluice_pipeline_errors_total 1 once the pipeline's Wait has returned an error.
# TYPE sluice_pipeline_errors_total counter
sluice_pipeline_errors_total{pipeline="orders"} 0
# HELP sluice_pipeline_state 1 for the pipeline's current state: running, or done (Wait has returned).
# TYPE sluice_pipeline_state gauge
sluice_pipeline_state{pipeline="orders",state="done"} 1
sluice_pipeline_state{pipeline="orders",state="running"} 0
# HELP sluice_stage_items_total Items a stage took from its input (direction=in) or handed to its output (direction=out).
# TYPE sluice_stage_items_total counter
sluice_stage_items_total{direction="in",pipeline="orders",stage="orders"} 0
sluice_stage_items_total{direction="in",pipeline="orders",stage="price"} 1000
sluice_stage_items_total{direction="in",pipeline="orders",stage="store"} 1000
sluice_stage_items_total{direction="out",pipeline="orders",stage="orders"} 1000
sluice_stage_items_total{direction="out",pipeline="orders",stage="price"} 1000
sluice_stage_items_total{direction="out",pipeline="orders",stage="store"} 0
# HELP sluice_stage_queue_capacity Items a stage's input queue holds when full.
# TYPE sluice_stage_queue_capacity gauge
sluice_stage_queue_capacity{pipeline="orders",stage="price"} 2048
sluice_stage_queue_capacity{pipeline="orders",stage="store"} 2048
# HELP sluice_stage_queue_length Items queued on a stage's input, waiting for it.
# TYPE sluice_stage_queue_length gauge
sluice_stage_queue_length{pipeline="orders",stage="price"} 0
sluice_stage_queue_length{pipeline="orders",stage="store"} 0
# HELP sluice_stage_workers Goroutines of a stage still running.
# TYPE sluice_stage_workers gauge
sluice_stage_workers{pipeline="orders",stage="orders"} 0
sluice_stage_workers{pipeline="orders",stage="price"} 0
sluice_stage_workers{pipeline="orders",stage="store"} 0
# HELP sluice_stage_info Always 1: a stage's kind (map, batch, reduce, ...) and the overflow policy of its output.
# TYPE sluice_stage_info gauge
sluice_stage_info{kind="collect",pipeline="orders",policy="",stage="store"} 1
sluice_stage_info{kind="map",pipeline="orders",policy="block",stage="price"} 1
sluice_stage_info{kind="source",pipeline="orders",policy="block",stage="orders"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"sluice_pipeline_errors_total", "sluice_pipeline_state", "sluice_stage_items_total",
		"sluice_stage_queue_capacity", "sluice_stage_queue_length", "sluice_stage_workers", "sluice_stage_info"); err != nil {
		t.Fatal(err)
	}
	// Stages that never drop export no drop counter; sources no latency.
	if n := testutil.CollectAndCount(NewCollector(orders(t, "again", 10)), "sluice_stage_dropped_total"); n != 0 {
		t.Fatalf("got %d dropped series for a pipeline that blocks, want 0", n)
	}
	if n := testutil.CollectAndCount(NewCollector(orders(t, "again", 10)), "sluice_stage_latency_seconds"); n != 2 {
		t.Fatalf("got %d latency histograms, want 2 (price and store, not the source)", n)
	}
}

func TestCollectorShowsAStuckStageQueueFullAndItsProducerWaiting(t *testing.T) {
	gate := make(chan struct{})
	p := sluice.New(context.Background(), sluice.Named("stuck"))
	src := sluice.From(p, "numbers", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := range 100_000 {
			if !out.Send(i) {
				return ctx.Err()
			}
		}
		return nil
	}, sluice.Chunk(256), sluice.Buffer(512)) // fixed chunks: two fill the queue
	held := sluice.Map(p, "held", src, 1, func(ctx context.Context, v int) (int, error) {
		<-gate
		return v, nil
	})
	sluice.ForEach(p, "discard", held, 1, func(context.Context, int) error { return nil })
	defer func() {
		close(gate)
		if err := p.Wait(); err != nil {
			t.Error(err)
		}
	}()
	// held takes one chunk and waits on the gate; two more fill its queue
	// and the source waits for room.
	pollUntil(t, "the held stage's queue is full and the source waits", func() bool {
		s := p.Stats()
		return s.Stages[1].InDepth == 512 && s.Stages[0].Waiting == 1 && s.Stages[2].Waiting == 1
	})
	reg := registry(t, NewCollector(p))
	want := `
# HELP sluice_pipeline_state 1 for the pipeline's current state: running, or done (Wait has returned).
# TYPE sluice_pipeline_state gauge
sluice_pipeline_state{pipeline="stuck",state="done"} 0
sluice_pipeline_state{pipeline="stuck",state="running"} 1
# HELP sluice_stage_queue_capacity Items a stage's input queue holds when full.
# TYPE sluice_stage_queue_capacity gauge
sluice_stage_queue_capacity{pipeline="stuck",stage="discard"} 8
sluice_stage_queue_capacity{pipeline="stuck",stage="held"} 512
# HELP sluice_stage_input_chunk_size Items a chunk of a stage's input carries now: it adapts to the stage's cost per item.
# TYPE sluice_stage_input_chunk_size gauge
sluice_stage_input_chunk_size{pipeline="stuck",stage="discard"} 1
sluice_stage_input_chunk_size{pipeline="stuck",stage="held"} 256
# HELP sluice_stage_queue_length Items queued on a stage's input, waiting for it.
# TYPE sluice_stage_queue_length gauge
sluice_stage_queue_length{pipeline="stuck",stage="discard"} 0
sluice_stage_queue_length{pipeline="stuck",stage="held"} 512
# HELP sluice_stage_workers Goroutines of a stage still running.
# TYPE sluice_stage_workers gauge
sluice_stage_workers{pipeline="stuck",stage="discard"} 1
sluice_stage_workers{pipeline="stuck",stage="held"} 1
sluice_stage_workers{pipeline="stuck",stage="numbers"} 1
# HELP sluice_stage_workers_waiting Goroutines of a stage waiting for input or for room downstream.
# TYPE sluice_stage_workers_waiting gauge
sluice_stage_workers_waiting{pipeline="stuck",stage="discard"} 1
sluice_stage_workers_waiting{pipeline="stuck",stage="held"} 0
sluice_stage_workers_waiting{pipeline="stuck",stage="numbers"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sluice_pipeline_state",
		"sluice_stage_queue_capacity", "sluice_stage_input_chunk_size", "sluice_stage_queue_length", "sluice_stage_workers",
		"sluice_stage_workers_waiting"); err != nil {
		t.Fatal(err)
	}
	// Time passes: the waiting source's blocked time grows between scrapes.
	first := value(t, reg, "sluice_stage_blocked_seconds_total", "stage=numbers")
	pollUntil(t, "the source's blocked time grows", func() bool {
		return value(t, reg, "sluice_stage_blocked_seconds_total", "stage=numbers") > first
	})
}

func TestCollectorCountsDropsByTheirReason(t *testing.T) {
	for _, policy := range []sluice.Overflow{sluice.DropNewest, sluice.DropOldest} {
		gate := make(chan struct{})
		p := sluice.New(context.Background(), sluice.Named("lossy"))
		src := sluice.FromSlice(p, "ticks", make([]int, 10_000), sluice.Buffer(64), sluice.Chunk(16), sluice.OnFull(policy))
		sluice.ForEach(p, "slow", src, 1, func(context.Context, int) error {
			<-gate
			return nil
		})
		pollUntil(t, "the source has sent everything", func() bool { return p.Stats().Stages[0].Running == 0 })
		reg := registry(t, NewCollector(p))
		dropped := p.Stats().Stages[0].Dropped
		got := value(t, reg, "sluice_stage_dropped_total", "stage=ticks", "reason="+policy.String())
		close(gate)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if dropped == 0 || got != float64(dropped) {
			t.Fatalf("%v: got sluice_stage_dropped_total %v, want the stage's %d drops (> 0)", policy, got, dropped)
		}
	}
}

func TestCollectorCountsTheErrorOfAFailedPipeline(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("failing"))
	src := sluice.FromSlice(p, "in", []int{1, 2, 3})
	sluice.ForEach(p, "check", src, 1, func(_ context.Context, v int) error {
		if v == 2 {
			return errors.New("bad item")
		}
		return nil
	})
	if err := p.Wait(); err == nil {
		t.Fatal("got no error from the pipeline, want one")
	}
	reg := registry(t, NewCollector(p))
	if got := value(t, reg, "sluice_pipeline_errors_total", "pipeline=failing"); got != 1 {
		t.Fatalf("got sluice_pipeline_errors_total %v, want 1", got)
	}
	if got := value(t, reg, "sluice_pipeline_state", "state=done"); got != 1 {
		t.Fatalf("got state done %v, want 1", got)
	}
}

// coreHistogram is a Histogram laid out as a pipeline's are (its Bounds
// are those of a pipeline that has run), holding the durations ds.
func coreHistogram(t *testing.T, ds ...time.Duration) sluice.Histogram {
	t.Helper()
	b := orders(t, "bounds", 1).Stats().Stages[1].Latency.Bounds // the Map stage
	if len(b) == 0 {
		t.Fatal("a Map stage that ran has no latency histogram")
	}
	h := sluice.Histogram{Bounds: b, Counts: make([]uint64, len(b))}
	for _, d := range ds {
		i, _ := slices.BinarySearch(b[:len(b)-1], d) // the first bucket whose bound is ≥ d; the last has none
		h.Counts[i]++
		h.Count++
		h.Sum += d
	}
	return h
}

// The core's 16 buckets per power of two are merged into one per power of
// two from ~1 µs to ~34 s, with exact cumulative counts: a bound is the
// largest duration below a power of two of nanoseconds.
func TestLatencyHistogramHasOneBucketPerPowerOfTwo(t *testing.T) {
	ds := []time.Duration{0, 500, 1023, 1024, 3000, time.Millisecond, 40 * time.Second}
	count, sum, cum := buckets(coreHistogram(t, ds...))
	if count != 7 || math.Abs(sum-(40+1e-3+5547e-9)) > 1e-12 {
		t.Fatalf("got count %d, sum %v; want 7, 40.001005547", count, sum)
	}
	if len(cum) != maxPow-minPow+1 {
		t.Fatalf("got %d buckets, want %d (2^%d … 2^%d ns)", len(cum), maxPow-minPow+1, minPow, maxPow)
	}
	for k := minPow; k <= maxPow; k++ {
		le := time.Duration(1<<k - 1)
		var want uint64
		for _, d := range ds {
			if d <= le {
				want++
			}
		}
		if got, ok := cum[le.Seconds()]; !ok || got != want {
			t.Errorf("le=%v (2^%d-1 ns): got %d (present %v), want %d", le.Seconds(), k, got, ok, want)
		}
	}
}

func TestLatencyHistogramMatchesTheCoreSamples(t *testing.T) {
	// 256 items a chunk, one chunk in 8 sampled: 200k items give ~97 samples
	// per stage.
	p := orders(t, "latency", 200_000)
	reg := registry(t, NewCollector(p))
	st := p.Stats().Stages[1]
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var ph *dto.Histogram
	for _, f := range fams {
		if f.GetName() != "sluice_stage_latency_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "stage" && l.GetValue() == "price" {
					ph = m.GetHistogram()
				}
			}
		}
	}
	if ph == nil || st.Latency.Count == 0 {
		t.Fatalf("got histogram %v and %d core samples, want both", ph, st.Latency.Count)
	}
	if ph.GetSampleCount() != st.Latency.Count || ph.GetSampleSum() != st.Latency.Sum.Seconds() {
		t.Fatalf("got count %d sum %v, want the core's %d and %v", ph.GetSampleCount(), ph.GetSampleSum(),
			st.Latency.Count, st.Latency.Sum.Seconds())
	}
	// Each bucket counts exactly the core's samples at or below its bound.
	if len(ph.GetBucket()) != maxPow-minPow+1 {
		t.Fatalf("got %d buckets, want %d", len(ph.GetBucket()), maxPow-minPow+1)
	}
	for _, b := range ph.GetBucket() {
		var want uint64
		for i, c := range st.Latency.Counts[:len(st.Latency.Counts)-1] {
			if st.Latency.Bounds[i].Seconds() <= b.GetUpperBound() {
				want += c
			}
		}
		if b.GetCumulativeCount() != want {
			t.Fatalf("got bucket le=%v with %d, want the core's %d samples at or below it", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
}

// Items settled by an error policy and retried calls are counted per stage.
func TestCollectorCountsFailedItemsAndRetries(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("policies"))
	src := sluice.FromSlice(p, "in", []int{1, 2, 3, 4, 5, 6})
	// Odd items fail every attempt; 3 attempts each, no wait between them.
	checked := sluice.Map(p, "check", src, 1, func(_ context.Context, v int) (int, error) {
		if v%2 == 1 {
			return 0, errors.New("odd")
		}
		return v, nil
	}, sluice.SkipErrors(), sluice.Retry(3, 0, 0))
	sluice.Collect(p, "store", checked)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	reg := registry(t, NewCollector(p))
	for _, c := range []struct {
		name, stage string
		want        float64
	}{
		{"sluice_stage_failed_total", "check", 3},
		{"sluice_stage_retries_total", "check", 6},
		{"sluice_stage_failed_total", "store", 0},
		{"sluice_stage_retries_total", "in", 0},
	} {
		if got := value(t, reg, c.name, "pipeline=policies", "stage="+c.stage); got != c.want {
			t.Errorf("got %s{stage=%q} %v, want %v", c.name, c.stage, got, c.want)
		}
	}
}

func TestCollectorPassesPrometheusLint(t *testing.T) {
	gate := make(chan struct{})
	running := sluice.New(context.Background(), sluice.Named("running"))
	src := sluice.FromSlice(running, "src", make([]int, 5000), sluice.OnFull(sluice.DropOldest), sluice.Buffer(256))
	sluice.ForEach(running, "sink", src, 1, func(context.Context, int) error { <-gate; return nil })
	defer func() {
		close(gate)
		running.Wait()
	}()
	reg := registry(t, NewCollector(orders(t, "done", 1000), running))
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestAddAndRemoveChangeWhatIsExported(t *testing.T) {
	a, b := orders(t, "a", 10), orders(t, "b", 10)
	c := NewCollector(a)
	series := func() int { return testutil.CollectAndCount(c, "sluice_pipeline_state") }
	if n := series(); n != 2 {
		t.Fatalf("got %d state series for one pipeline, want 2", n)
	}
	c.Add(b)
	c.Add(b)
	if n := series(); n != 4 {
		t.Fatalf("got %d state series for two pipelines, want 4", n)
	}
	c.Remove(a)
	c.Remove(a)
	if n := series(); n != 2 {
		t.Fatalf("got %d state series after Remove, want 2", n)
	}
	// A rerun under the same name, once the old run is removed.
	c.Remove(b)
	c.Add(orders(t, "b", 10))
	if n := series(); n != 2 {
		t.Fatalf("got %d state series after the rerun, want 2", n)
	}
}

func TestAddPanicsOnProgrammerError(t *testing.T) {
	mustPanic := func(f func(), parts ...string) {
		t.Helper()
		defer func() {
			msg, _ := recover().(string)
			for _, part := range append([]string{"prom: "}, parts...) {
				if !strings.Contains(msg, part) {
					t.Fatalf("got panic %q, want it to mention %q", msg, part)
				}
			}
		}()
		f()
	}
	mustPanic(func() { NewCollector(nil) }, "nil")
	mustPanic(func() { NewCollector(orders(t, "same", 1), orders(t, "same", 1)) }, `"same"`)
}

func TestCollectorExportsAutoWorkersAndThrottledTime(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("auto"))
	src := sluice.FromSlice(p, "in", make([]int, 100))
	out := sluice.Map(p, "fetch", src, 3, func(_ context.Context, v int) (int, error) { return v, nil },
		sluice.Auto(2, 16), sluice.Throttle(sleepy(time.Millisecond)))
	sluice.Collect(p, "store", out)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	reg := registry(t, NewCollector(p))
	for _, c := range []struct {
		name string
		want float64
		lbl  []string
	}{
		{"sluice_stage_workers_bound", 2, []string{"bound=min"}},
		{"sluice_stage_workers_bound", 16, []string{"bound=max"}},
		{"sluice_stage_workers_reason", 1, nil},
	} {
		if got := value(t, reg, c.name, append([]string{"pipeline=auto", "stage=fetch"}, c.lbl...)...); got != c.want {
			t.Errorf("got %s %v, want %v", c.name, got, c.want)
		}
	}
	if got := value(t, reg, "sluice_stage_workers_target", "stage=fetch"); got < 2 || got > 16 {
		t.Errorf("got sluice_stage_workers_target %v, want within Auto's bounds 2–16", got)
	}
	if got := value(t, reg, "sluice_stage_throttled_seconds_total", "stage=fetch"); got < 0.1*0.9 {
		t.Errorf("got sluice_stage_throttled_seconds_total %v, want about 100 waits of 1 ms", got)
	}
	if got := value(t, reg, "sluice_stage_throttled_seconds_total", "stage=store"); got != 0 {
		t.Errorf("got %v throttled seconds for a stage without Throttle, want 0", got)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// sleepy is a limiter that lets a call go after d, one at a time.
type sleepy time.Duration

var sleepyMu sync.Mutex

func (d sleepy) Wait(ctx context.Context) error {
	sleepyMu.Lock()
	defer sleepyMu.Unlock()
	select {
	case <-time.After(time.Duration(d)):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A Window stage's keys, panes, late items and watermark are exported.
func TestCollectorExportsWindows(t *testing.T) {
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
	reg := registry(t, NewCollector(p))
	for _, c := range []struct {
		name  string
		label string
		want  float64
	}{
		{"sluice_window_panes_total", "revision=first", 4},  // a [0,1) b [0,1) a [1,2) a [3,4)
		{"sluice_window_panes_total", "revision=update", 1}, // a at 900 ms, within the lateness
		{"sluice_window_late_total", "route=dropped", 1},    // b at 10 ms, watermark 3 s
		{"sluice_window_late_total", "route=late_stream", 0},
		{"sluice_window_open", "", 0},
		{"sluice_stage_keys", "", 0},
	} {
		want := []string{"pipeline=win", "stage=count"}
		if c.label != "" {
			want = append(want, c.label)
		}
		if got := value(t, reg, c.name, want...); got != c.want {
			t.Errorf("got %s{%s} %v, want %v", c.name, c.label, got, c.want)
		}
	}
}
