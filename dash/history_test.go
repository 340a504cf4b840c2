package dash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// reading is a snapshot of a two-stage pipeline (src → work) at elapsed
// time at: src has handed on out items, work has taken in items and has
// depth of 100 queued.
func reading(at time.Duration, out, in, depth int64) sluice.Snapshot {
	return sluice.Snapshot{Elapsed: at,
		Stages: []sluice.StageStats{
			{Name: "src", Kind: "source", Out: out},
			{Name: "work", Kind: "map", In: in, InDepth: depth, InCapacity: 100},
		},
		Edges: []sluice.EdgeStats{{From: "src", To: "work", Sent: out, Received: in, Depth: depth, Capacity: 100}},
	}
}

// same reports whether got and want are equal, NaN equal to NaN.
func same(got, want Series) bool {
	return slices.EqualFunc(got, want, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) })
}

func nan() float64 { return math.NaN() }

func TestHistoryRatesComeFromTheCountersOfConsecutiveReadings(t *testing.T) {
	var h history
	h.add(reading(1*time.Second, 100, 50, 50))
	h.add(reading(2*time.Second, 300, 100, 80))
	h.add(reading(3*time.Second, 600, 150, 100))

	first, rate, fill := h.series(0)
	if want := (Series{100, 200, 300}); first != 1 || !same(rate, want) {
		t.Fatalf("src: got rates %v from second %d, want %v from second 1", rate, first, want)
	}
	if want := (Series{0, 0, 0}); !same(fill, want) {
		t.Fatalf("src: got fill %v, want %v (a source has no input)", fill, want)
	}
	_, rate, fill = h.series(1)
	if want := (Series{50, 50, 50}); !same(rate, want) {
		t.Fatalf("work: got rates %v, want %v", rate, want)
	}
	if want := (Series{0.5, 0.8, 1}); !same(fill, want) {
		t.Fatalf("work: got fill %v, want %v", fill, want)
	}
}

func TestHistoryAddsNothingWithinTheNewestSecond(t *testing.T) {
	var h history
	h.add(reading(1*time.Second, 100, 100, 0))
	h.add(reading(1500*time.Millisecond, 900, 900, 0)) // counted with the next point
	h.add(reading(2*time.Second, 1100, 1100, 0))
	if _, rate, _ := h.series(0); !same(rate, Series{100, 1000}) {
		t.Fatalf("got rates %v, want [100 1000]", rate)
	}
	// Before the pipeline's first whole second there is no point.
	var early history
	early.add(reading(400*time.Millisecond, 10, 10, 0))
	if _, rate, fill := early.series(0); len(rate) != 0 || len(fill) != 0 {
		t.Fatalf("got rates %v and fill %v before the first second, want none", rate, fill)
	}
}

func TestHistoryFillsAGapWithTheAverageRateAndAnUnknownFill(t *testing.T) {
	var h history
	// Nobody read the board for the first 2.5 s, then for 3 s.
	h.add(reading(2500*time.Millisecond, 250, 250, 10))
	h.add(reading(5500*time.Millisecond, 550, 550, 20))
	first, rate, fill := h.series(1)
	if want := (Series{100, 100, 100, 100, 100}); first != 1 || !same(rate, want) {
		t.Fatalf("got rates %v from second %d, want %v from second 1", rate, first, want)
	}
	if want := (Series{nan(), 0.1, nan(), nan(), 0.2}); !same(fill, want) {
		t.Fatalf("got fill %v, want %v: known only at the readings", fill, want)
	}
}

func TestHistoryKeepsTheLastFiveMinutes(t *testing.T) {
	var h history
	var n int64
	for s := int64(1); s <= 400; s++ {
		n += s // s items in second s
		h.add(reading(time.Duration(s)*time.Second, n, n, 0))
	}
	first, rate, _ := h.series(0)
	if first != 101 || len(rate) != historyLen || rate[0] != 101 || rate[len(rate)-1] != 400 {
		t.Fatalf("got %d points from second %d, %v … %v; want %d from second 101, 101 … 400",
			len(rate), first, rate[0], rate[len(rate)-1], historyLen)
	}
	for i, r := range rate {
		if r != float64(first)+float64(i) {
			t.Fatalf("got %v at second %d, want %d", r, first+int64(i), first+int64(i))
		}
	}
	// A gap longer than the ring overwrites all of it, once.
	h.add(reading(1000*time.Second, n+6000, n+6000, 0))
	first, rate, _ = h.series(0)
	if first != 701 || len(rate) != historyLen || rate[0] != 10 || rate[historyLen-1] != 10 {
		t.Fatalf("got %d points from second %d, %v … %v; want %d from second 701, all 10",
			len(rate), first, rate[0], rate[len(rate)-1], historyLen)
	}
}

func TestHistoryOfAStageAddedLaterStartsWhenItAppears(t *testing.T) {
	var h history
	one := reading(1*time.Second, 100, 0, 0)
	one.Stages, one.Edges = one.Stages[:1], nil
	h.add(one)
	h.add(reading(2*time.Second, 200, 40, 0))
	if _, rate, _ := h.series(1); !same(rate, Series{nan(), 40}) {
		t.Fatalf("got rates %v for the later stage, want [NaN 40]", rate)
	}
	if first, rate, _ := h.series(7); first != 1 || len(rate) != 0 {
		t.Fatalf("got %v from second %d for a stage not there, want nothing", rate, first)
	}
}

func TestSeriesWritesUnknownPointsAsNullAndRounds(t *testing.T) {
	b, err := json.Marshal(Series{123456.7, 0.12345, nan(), 0, 42.42})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `[123000,0.123,null,0,42.4]`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	var back Series
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if want := (Series{123000, 0.123, nan(), 0, 42.4}); !same(back, want) {
		t.Fatalf("got %v back, want %v", back, want)
	}
}

// TestHistoryShowsABottleneckThatMoves runs a pipeline whose slow stage
// changes half way — enrich for the first 20 s, then store, as seed 004's
// moved from enrichment to the ClickHouse writes — and reads the board
// every half second, in a synctest bubble so that 40 s pass at once.
func TestHistoryShowsABottleneckThatMoves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const half = 20 * time.Second
		var storeSlow atomic.Bool
		ctx, stop := context.WithCancel(context.Background())
		p := sluice.New(ctx, sluice.Named("moving"))
		src := sluice.From(p, "events", func(ctx context.Context, out *sluice.Emitter[int]) error {
			for i := 0; out.Send(i); i++ {
			}
			return nil
		}, sluice.Buffer(64), sluice.Chunk(1))
		slowUnless := func(slow bool) { // 200 items/s when slow, 1000 when not
			if slow {
				time.Sleep(5 * time.Millisecond)
			} else {
				time.Sleep(time.Millisecond)
			}
		}
		enriched := sluice.Map(p, "enrich", src, 1, func(_ context.Context, v int) (int, error) {
			slowUnless(!storeSlow.Load())
			return v, nil
		}, sluice.Buffer(64), sluice.Chunk(1))
		sluice.ForEach(p, "store", enriched, 1, func(context.Context, int) error {
			slowUnless(storeSlow.Load())
			return nil
		})
		board := Handler(p)
		var fromSecond int64
		var enrichFill, storeFill, storeRate Series
		for at := time.Duration(0); at < 2*half; at += 500 * time.Millisecond {
			if at == half {
				storeSlow.Store(true)
			}
			time.Sleep(500 * time.Millisecond)
			pv := board.View().Pipelines[0]
			fromSecond = pv.HistoryFromSecond
			enrichFill, storeFill = pv.Stages[1].QueueFillHistory, pv.Stages[2].QueueFillHistory
			storeRate = pv.Stages[2].ItemsPerSecondHistory
		}
		stop()
		if err := p.Wait(); !errors.Is(err, context.Canceled) {
			t.Fatalf("got pipeline error %v, want context.Canceled", err)
		}
		if fromSecond != 1 || len(enrichFill) != 40 || len(storeFill) != 40 {
			t.Fatalf("got %d and %d points from second %d, want 40 from second 1", len(enrichFill), len(storeFill), fromSecond)
		}
		// Seconds 5 to 18: enrich's input queue is full and store's is
		// not; from 25 on store's is full (and enrich's too: it waits for
		// room). The seconds around the change are left out: queues take a
		// moment to fill and drain.
		var got []string
		for i := range enrichFill {
			sec := fromSecond + int64(i)
			e, s := enrichFill[i], storeFill[i]
			if sec >= 5 && sec <= 18 && !(e >= fullAt && s < fullAt) || sec >= 25 && !(s >= fullAt) {
				got = append(got, fmt.Sprintf("second %d: enrich %.2f, store %.2f", sec, e, s))
			}
		}
		if len(got) > 0 {
			t.Fatalf("input queue fill does not show the bottleneck moving from enrich to store:\n%s", strings.Join(got, "\n"))
		}
		// Store took 200 items/s while it was slow.
		if r := storeRate[35]; r < 190 || r > 210 {
			t.Fatalf("got store at %v items/s in second %d, want about 200", r, fromSecond+35)
		}
	})
}

func TestViewCarriesFailedItemsAndRetries(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("failing"))
	calls := map[int]int{}
	// Odd numbers fail for good; 4 fails twice and then succeeds.
	parsed := sluice.Map(p, "parse", sluice.FromSlice(p, "lines", []int{1, 2, 3, 4, 5, 6}), 1,
		func(_ context.Context, v int) (int, error) {
			calls[v]++
			switch {
			case v%2 == 1:
				return 0, sluice.Permanent(errors.New("malformed"))
			case v == 4 && calls[v] < 3:
				return 0, errors.New("try again")
			}
			return v, nil
		}, sluice.SkipErrors(), sluice.Retry(5, time.Microsecond, time.Microsecond))
	sluice.Collect(p, "kept", parsed)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	s := Handler(p).View().Pipelines[0].Stages[1]
	if s.Name != "parse" || s.Failed != 3 || s.Retries != 2 || s.Out != 3 {
		t.Fatalf("got %s failed=%d retries=%d out=%d, want parse failed=3 retries=2 out=3", s.Name, s.Failed, s.Retries, s.Out)
	}
}

// TestLatencyQuantilesAreWithinASixteenthOnThePipelinesBuckets puts every
// sample of a real pipeline histogram's shape at 3 ms: the page's p50 and
// p99 must be within 1/16 of that, not a bucket's top (up to 2× high
// with power-of-two buckets).
func TestLatencyQuantilesAreWithinASixteenthOnThePipelinesBuckets(t *testing.T) {
	bounds := finished(t, "shape").Stats().Stages[1].Latency.Bounds
	if len(bounds) == 0 {
		t.Fatal("got no latency buckets from a finished pipeline")
	}
	const v = 3 * time.Millisecond
	b, _ := slices.BinarySearch(bounds[:len(bounds)-1], v) // the bucket that counts v
	h := sluice.Histogram{Bounds: bounds, Counts: make([]uint64, len(bounds)), Count: 1000, Sum: 1000 * v}
	h.Counts[b] = 1000
	cur := sluice.Snapshot{Elapsed: time.Second, Stages: []sluice.StageStats{{Name: "s", Kind: "map", Workers: 1, Latency: h}}}
	s := viewOf(nil, cur, new(history)).Stages[0]
	for _, q := range []float64{s.LatencyP50Seconds, s.LatencyP99Seconds} {
		if err := math.Abs(q-v.Seconds()) / v.Seconds(); err > 1.0/16 {
			t.Fatalf("got p50 %v s, p99 %v s, want both within 1/16 of %v", s.LatencyP50Seconds, s.LatencyP99Seconds, v)
		}
	}
}
