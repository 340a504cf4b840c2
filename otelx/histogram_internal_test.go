package otelx

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

var noAttrs = metric.WithAttributeSet(*attribute.EmptySet())

// coreBounds returns the Bounds of a pipeline's latency histograms.
func coreBounds(t *testing.T) []time.Duration {
	t.Helper()
	p := sluice.New(context.Background())
	sluice.Collect(p, "all", sluice.Map(p, "id", sluice.FromSlice(p, "in", []int{1}), 1,
		func(_ context.Context, v int) (int, error) { return v, nil }))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	b := p.Stats().Stages[1].Latency.Bounds
	if len(b) == 0 {
		t.Fatal("a Map stage that ran has no latency histogram")
	}
	return b
}

// add counts ds into h, as the core does.
func add(h *sluice.Histogram, ds ...time.Duration) {
	for _, d := range ds {
		i, _ := slices.BinarySearch(h.Bounds[:len(h.Bounds)-1], d) // the first bucket whose bound is ≥ d; the last has none
		h.Counts[i]++
		h.Count++
		h.Sum += d
	}
}

type histReader struct {
	r *sdkmetric.ManualReader
	h metric.Float64Histogram
}

func newHistReader(t *testing.T) histReader {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	h, err := mp.Meter("test").Float64Histogram("latency", metric.WithExplicitBucketBoundaries(latencyBounds...))
	if err != nil {
		t.Fatal(err)
	}
	return histReader{r, h}
}

func (hr histReader) point(t *testing.T) metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := hr.r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm.ScopeMetrics[0].Metrics[0].Data.(metricdata.Histogram[float64]).DataPoints[0]
}

// check fails unless p counts exactly ds in each bucket, and their sum
// within a nanosecond per sample.
func check(t *testing.T, p metricdata.HistogramDataPoint[float64], ds []time.Duration) {
	t.Helper()
	want := make([]uint64, len(latencyBounds)+1)
	var sum time.Duration
	for _, d := range ds {
		i, _ := slices.BinarySearch(latencyBounds, d.Seconds())
		want[i]++
		sum += d
	}
	if !slices.Equal(p.BucketCounts, want) || p.Count != uint64(len(ds)) {
		t.Fatalf("got %d samples in buckets %v, want %d in %v", p.Count, p.BucketCounts, len(ds), want)
	}
	if math.Abs(p.Sum-sum.Seconds()) > float64(len(ds))*1e-9 {
		t.Fatalf("got sum %v, want %v ± %d ns", p.Sum, sum.Seconds(), len(ds))
	}
}

func TestRecordSinceRecordsOnlyNewSamplesInTheirBuckets(t *testing.T) {
	hr := newHistReader(t)
	core := sluice.Histogram{Bounds: coreBounds(t)}
	core.Counts = make([]uint64, len(core.Bounds))
	ctx := context.Background()

	first := []time.Duration{0, 1, 15, 500, 1023, 1024, 3000, time.Millisecond, 1<<20 - 1, 1 << 20, 40 * time.Second}
	add(&core, first...)
	counts, recorded := recordSince(ctx, hr.h, core, nil, 0, noAttrs)
	check(t, hr.point(t), first)

	// Nothing new: nothing recorded.
	counts, recorded = recordSince(ctx, hr.h, core, counts, recorded, noAttrs)
	check(t, hr.point(t), first)

	second := []time.Duration{7 * time.Microsecond, 7 * time.Microsecond, 2 * time.Second, 33 * time.Second}
	add(&core, second...)
	recordSince(ctx, hr.h, core, counts, recorded, noAttrs)
	check(t, hr.point(t), append(first, second...))
}

// A snapshot may read a sample's count before its sum: the sum recorded
// falls short, and the next collections make it up as far as their
// samples' buckets allow.
func TestRecordSinceCarriesASumReadLateToTheNextCollection(t *testing.T) {
	hr := newHistReader(t)
	core := sluice.Histogram{Bounds: coreBounds(t)}
	core.Counts = make([]uint64, len(core.Bounds))
	ctx := context.Background()

	all := []time.Duration{3 * time.Millisecond, 5 * time.Millisecond, 6 * time.Millisecond}
	add(&core, all...)
	early := core
	early.Sum -= 6 * time.Millisecond // the last sample's sum not seen yet
	counts, recorded := recordSince(ctx, hr.h, early, nil, 0, noAttrs)
	// The samples are recorded at their buckets' lower ends, the least the
	// counts allow: short of the 14 ms they add up to.
	if p := hr.point(t); p.Count != 3 || p.Sum >= (14*time.Millisecond).Seconds() {
		t.Fatalf("got %d samples summing to %v, want 3 summing to less than 14 ms", p.Count, p.Sum)
	}
	// The next samples take up the difference, within their buckets.
	more := slices.Repeat([]time.Duration{4 * time.Millisecond}, 8)
	add(&core, more...)
	recordSince(ctx, hr.h, core, counts, recorded, noAttrs)
	check(t, hr.point(t), append(all, more...))
}
