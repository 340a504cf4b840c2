package sluice_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

func TestOrderedMapKeepsOrderUnderRandomDelays(t *testing.T) {
	for _, workers := range []int{1, 2, 7} {
		for _, window := range []int{0, 1, 300} {
			t.Run(fmt.Sprintf("workers=%d/window=%d", workers, window), func(t *testing.T) {
				const n = 3000
				p := sluice.New(context.Background())
				// Small chunks so that many chunks are in flight at once.
				src := sluice.FromSlice(p, "src", ints(n), sluice.Chunk(7))
				var opts []sluice.StageOption
				if window > 0 {
					opts = append(opts, sluice.Window(window))
				}
				var mu sync.Mutex
				rng := rand.New(rand.NewPCG(1, uint64(workers)))
				m := sluice.OrderedMap(p, "slow", src, workers, func(_ context.Context, v int) (int, error) {
					mu.Lock()
					r := rng.IntN(16)
					mu.Unlock()
					switch {
					case r == 0:
						time.Sleep(20 * time.Microsecond)
					case r < 8:
						runtime.Gosched()
					}
					return v * 3, nil
				}, opts...)
				got := sluice.Collect(p, "collect", m)
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				want := ints(n)
				for i := range want {
					want[i] *= 3
				}
				if !slices.Equal(got.Value(), want) {
					g := got.Value()
					for i := range min(len(g), len(want)) {
						if g[i] != want[i] {
							t.Fatalf("got %d items, first difference at %d: %d, want %d", len(g), i, g[i], want[i])
						}
					}
					t.Fatalf("got %d items, want %d", len(g), len(want))
				}
			})
		}
	}
}

func TestOrderedMapErrorStopsIt(t *testing.T) {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "src", ints(10_000))
	m := sluice.OrderedMap(p, "fail", src, 4, func(_ context.Context, v int) (int, error) {
		if v == 777 {
			return 0, fmt.Errorf("bad %d", v)
		}
		return v, nil
	})
	sluice.ForEach(p, "sink", m, 1, func(context.Context, int) error { return nil })
	if err := p.Wait(); err == nil || err.Error() != `sluice: stage "fail": bad 777` {
		t.Fatalf("got %v, want the stage's error", err)
	}
}

func TestMergeDeliversEveryInputOnce(t *testing.T) {
	p := sluice.New(context.Background())
	var ins []sluice.Stream[int]
	var want []int
	for i := range 5 {
		xs := ints(1000 * (i + 1))
		for j := range xs {
			xs[j] += 1_000_000 * i
		}
		want = append(want, xs...)
		ins = append(ins, sluice.FromSlice(p, fmt.Sprint("src", i), xs))
	}
	got := sluice.Collect(p, "c", sluice.Merge(p, "merge", ins...))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, got.Value(), want)
	// Each input's order survives the merge.
	last := map[int]int{}
	for _, v := range got.Value() {
		src := v / 1_000_000
		if prev, ok := last[src]; ok && v < prev {
			t.Fatalf("input %d out of order: got %d after %d", src, v, prev)
		}
		last[src] = v
	}
}

func TestPartitionSendsEqualKeysToTheSameStream(t *testing.T) {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "src", ints(20_000))
	parts := sluice.Partition(p, "by-mod", src, 4, func(v int) int { return v % 10 })
	results := make([]*sluice.Result[[]int], len(parts))
	for i, s := range parts {
		results[i] = sluice.Collect(p, fmt.Sprint("c", i), s)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	owner := map[int]int{}
	var all []int
	for i, r := range results {
		vs := r.Value()
		if !slices.IsSorted(vs) {
			t.Fatalf("partition %d lost input order", i)
		}
		for _, v := range vs {
			if o, ok := owner[v%10]; ok && o != i {
				t.Fatalf("key %d went to partitions %d and %d", v%10, o, i)
			}
			owner[v%10] = i
		}
		all = append(all, vs...)
	}
	checkExactlyOnce(t, all, ints(20_000))
}

func TestBroadcastSendsEveryItemToEveryOutput(t *testing.T) {
	p := sluice.New(context.Background())
	outs := sluice.Broadcast(p, "bc", sluice.FromSlice(p, "src", ints(5000)), 3)
	var rs []*sluice.Result[[]int]
	for i, s := range outs {
		rs = append(rs, sluice.Collect(p, fmt.Sprint("c", i), s))
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if !slices.Equal(r.Value(), ints(5000)) {
			t.Fatalf("output %d: got %d items, want all 5000 in order", i, len(r.Value()))
		}
	}
}

func TestDropPoliciesCountEveryDiscardedItem(t *testing.T) {
	for _, policy := range []sluice.Overflow{sluice.DropNewest, sluice.DropOldest} {
		t.Run(policy.String(), func(t *testing.T) {
			const n = 50_000
			p := sluice.New(context.Background())
			src := sluice.FromSlice(p, "src", ints(n), sluice.Buffer(64), sluice.Chunk(16), sluice.OnFull(policy))
			release := make(chan struct{})
			var got []int
			sluice.ForEach(p, "slow", src, 1, func(_ context.Context, v int) error {
				if len(got) == 0 {
					<-release // hold the consumer until the source is done
				}
				got = append(got, v)
				return nil
			})
			for p.Stats().Stages[0].Running > 0 { // the source finishes: it never blocks
				time.Sleep(time.Millisecond)
			}
			close(release)
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			e := p.Stats().Edges[0]
			if int64(len(got))+e.Dropped != n {
				t.Fatalf("got %d delivered + %d dropped = %d, want %d", len(got), e.Dropped, int64(len(got))+e.Dropped, n)
			}
			if e.Dropped == 0 {
				t.Fatalf("got no drops, want some: the consumer was held")
			}
			if !slices.IsSorted(got) {
				t.Fatal("delivered items out of order")
			}
			if policy == sluice.DropOldest && got[len(got)-1] != n-1 {
				t.Fatalf("DropOldest: got last item %d, want the newest, %d", got[len(got)-1], n-1)
			}
		})
	}
}

func TestStatsCountItemsPerStage(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("counting"))
	src := sluice.FromSlice(p, "src", ints(10_000))
	even := sluice.Filter(p, "even", src, 2, func(_ context.Context, v int) (bool, error) { return v%2 == 0, nil })
	sluice.ForEach(p, "sink", even, 1, func(context.Context, int) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Pipeline != "counting" || !st.Done || len(st.Stages) != 3 || len(st.Edges) != 2 {
		t.Fatalf("got %+v, want a done snapshot of 3 stages and 2 edges", st)
	}
	type io struct{ in, out int64 }
	got := map[string]io{}
	for _, s := range st.Stages {
		got[s.Name] = io{s.In, s.Out}
	}
	want := map[string]io{"src": {0, 10_000}, "even": {10_000, 5000}, "sink": {5000, 0}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got in/out %v, want %v", got, want)
	}
	for _, e := range st.Edges {
		if e.Depth != 0 || e.Sent != e.Received {
			t.Fatalf("edge %s→%s: got depth %d sent %d received %d, want a drained edge", e.From, e.To, e.Depth, e.Sent, e.Received)
		}
	}
}

func TestStatsShowQueueDepthOfABlockedStage(t *testing.T) {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "src", ints(100_000), sluice.Buffer(1024), sluice.Chunk(64))
	release := make(chan struct{})
	sluice.ForEach(p, "stuck", src, 1, func(context.Context, int) error {
		<-release
		return nil
	})
	var st sluice.Snapshot
	for {
		st = p.Stats()
		if st.Stages[0].Waiting == 1 && st.Stages[1].Waiting == 0 && st.Edges[0].Depth == 1024 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if src := st.Stages[0]; src.WaitingForRoom != 1 {
		t.Fatalf("got %d source workers waiting for room, want 1", src.WaitingForRoom)
	}
	if e := st.Edges[0]; e.Chunks != e.ChunkCap || e.ChunkCap != 16 {
		t.Fatalf("got %d of %d chunks queued, want a full edge of 16 chunks", e.Chunks, e.ChunkCap)
	}
	stuck := st.Stages[1]
	if stuck.InDepth != 1024 || stuck.InCapacity != 1024 {
		t.Fatalf("got input depth %d of %d, want a full edge of 1024", stuck.InDepth, stuck.InCapacity)
	}
}

func TestStatsSampleLatencyThroughAStage(t *testing.T) {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "src", ints(2000), sluice.Chunk(10))
	slow := sluice.Map(p, "slow", src, 1, func(_ context.Context, v int) (int, error) {
		if v%10 == 0 {
			time.Sleep(100 * time.Microsecond)
		}
		return v, nil
	})
	sluice.ForEach(p, "sink", slow, 1, func(context.Context, int) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	lat := p.Stats().Stages[1].Latency
	// 200 chunks cross into "slow"; one in eight is sampled.
	if lat.Count < 20 || lat.Count > 30 {
		t.Fatalf("got %d latency samples, want about 200/8", lat.Count)
	}
	if q := lat.Quantile(0.5); q < 100*time.Microsecond {
		t.Fatalf("got median latency %v, want at least the 100µs each chunk takes", q)
	}
	if lat.Sum < time.Duration(lat.Count)*100*time.Microsecond {
		t.Fatalf("got sum %v over %d samples, want ≥ 100µs each", lat.Sum, lat.Count)
	}
	if src := p.Stats().Stages[0].Latency; src.Count != 0 {
		t.Fatalf("got %d latency samples for a source, want none", src.Count)
	}
}

func TestForEachChunkSeesEveryItemOnceInNaturalBatches(t *testing.T) {
	p := sluice.New(context.Background())
	var mu sync.Mutex
	var got []int
	largest := 0
	sluice.ForEachChunk(p, "bulk", sluice.FromSlice(p, "src", ints(10_000)), 3, func(_ context.Context, items []int) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, items...)
		largest = max(largest, len(items))
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, got, ints(10_000))
	// Chunk sizes adapt to the sink's cost per item (a few ns here, tens
	// under the race detector), up to DefaultChunk: a flood must travel in
	// chunks of hundreds of items at least, not a few.
	if largest < 128 || largest > sluice.DefaultChunk {
		t.Fatalf("got largest chunk %d, want 128..%d from a flood", largest, sluice.DefaultChunk)
	}
}

func TestAwaitShowsTheGeneratorWaitingForInput(t *testing.T) {
	in := make(chan int)
	p := sluice.New(context.Background())
	src := sluice.From(p, "gen", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for {
			var v int
			var ok bool
			if !out.Await(func() { v, ok = <-in }) {
				return ctx.Err()
			}
			if !ok {
				return nil
			}
			out.Send(v)
		}
	})
	res := sluice.ToChan(p, "out", src)
	in <- 7
	if v := <-res; v != 7 { // Await flushed it: no chunk had to fill
		t.Fatalf("got %d, want 7", v)
	}
	for p.Stats().Stages[0].Waiting != 1 {
		time.Sleep(time.Millisecond)
	}
	if st := p.Stats().Stages[0]; st.WaitingForRoom != 0 {
		t.Fatalf("got %d waiting for room, want the generator waiting for input", st.WaitingForRoom)
	}
	close(in)
	for range res {
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
}

func TestStatsIsSafeWhileThePipelineIsBuilt(t *testing.T) {
	p := sluice.New(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			_ = p.Stats()
		}
	}()
	s := sluice.FromSlice(p, "src", ints(1000))
	for i := range 20 {
		s = sluice.Map(p, fmt.Sprint("m", i), s, 2, double)
	}
	sluice.Collect(p, "c", s)
	<-done
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
}

// A few slow items from a fast source reach every worker of a Map without
// a Chunk option: each call below returns only once all the workers are in
// a call at the same time, which needs the items spread over 8 chunks. The
// same through Merge, which passes chunks on whole, through two Merges, and
// through an OrderedMap, which hands on one result chunk per input chunk.
func TestSlowItemsSpreadOverEveryWorker(t *testing.T) {
	for _, path := range []string{"direct", "merge", "merge of merges", "ordered map"} {
		t.Run(path, func(t *testing.T) {
			p := sluice.New(context.Background())
			var opts []sluice.StageOption
			if path == "ordered map" {
				// Its input in chunks of 100: the chunks it hands on
				// must still be sized by the stage after it.
				opts = append(opts, sluice.Chunk(100))
			}
			in := sluice.FromSlice(p, "src", ints(200), opts...)
			switch path {
			case "merge":
				in = sluice.Merge(p, "merge", in)
			case "merge of merges":
				other := sluice.FromSlice(p, "none", []int{})
				in = sluice.Merge(p, "outer", sluice.Merge(p, "inner", in), other)
			case "ordered map":
				in = sluice.OrderedMap(p, "order", in, 2, func(_ context.Context, v int) (int, error) { return v, nil })
			}
			checkAllWorkersBusyAtOnce(t, p, in, 8, ints(200))
		})
	}
}

// checkAllWorkersBusyAtOnce runs a Map of n workers over in whose calls
// each return only once n calls are in flight together, and checks that
// each of want came out once.
func checkAllWorkersBusyAtOnce(t *testing.T, p *sluice.Pipeline, in sluice.Stream[int], workers int, want []int) {
	t.Helper()
	var mu sync.Mutex
	inFlight, peak := 0, 0
	all := make(chan struct{})
	out := sluice.Map(p, "slow", in, workers, func(ctx context.Context, v int) (int, error) {
		mu.Lock()
		inFlight++
		if inFlight > peak {
			if peak = inFlight; peak == workers {
				close(all)
			}
		}
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		select {
		case <-all:
			return v, nil
		case <-time.After(10 * time.Second):
			return 0, fmt.Errorf("item %d: only %d of %d workers ever busy at once", v, peak, workers)
		}
	})
	got := sluice.Collect(p, "out", out)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, got.Value(), want)
}

// ForEachChunk's cost is per call, as for a bulk insert: its chunks must
// not shrink because each call takes long.
func TestForEachChunkKeepsFullChunksForSlowCalls(t *testing.T) {
	p := sluice.New(context.Background())
	var calls, largest int
	sluice.ForEachChunk(p, "bulk", sluice.FromSlice(p, "src", ints(20_000)), 1, func(_ context.Context, items []int) error {
		calls++
		largest = max(largest, len(items))
		time.Sleep(2 * time.Millisecond)
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if largest != sluice.DefaultChunk || calls > 20 {
		t.Fatalf("%d calls, largest chunk %d: want full chunks of %d", calls, largest, sluice.DefaultChunk)
	}
}

// Chunk sizes follow the consumer's cost per item, and Stats shows them:
// one item for slow items, hundreds or more for cheap ones.
//
// It runs in a synctest bubble, where time passes only while goroutines
// sleep: the cheap stage's work takes no time at all, the slow stage's is
// exactly its sleeps, and a busy machine cannot blur the two.
func TestChunkSizeFollowsTheCostOfItems(t *testing.T) {
	synctest.Test(t, testChunkSizeFollowsTheCostOfItems)
}

func testChunkSizeFollowsTheCostOfItems(t *testing.T) {
	p := sluice.New(context.Background())
	slow := sluice.Map(p, "slow", sluice.FromSlice(p, "few", ints(200)), 1, func(_ context.Context, v int) (int, error) {
		time.Sleep(200 * time.Microsecond) // 4× the ~50 µs a chunk should take
		return v, nil
	})
	sluice.Collect(p, "keep", slow)
	cheap := sluice.Map(p, "cheap", sluice.FromSlice(p, "many", ints(200_000)), 1, double)
	sluice.Reduce(p, "sum", cheap, 0, func(a, v int) int { return a + v })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{}
	for _, st := range p.Stats().Stages {
		sizes[st.Name] = st.InChunkSize
	}
	if sizes["slow"] != 1 {
		t.Errorf("slow stage's input chunks: %d items, want 1", sizes["slow"])
	}
	if sizes["cheap"] != sluice.DefaultChunk {
		t.Errorf("cheap stage's input chunks: %d items, want %d", sizes["cheap"], sluice.DefaultChunk)
	}
}

// A consumer that wants full chunks is built after its producer has taken
// its first chunk (at one item): that chunk grows instead of leaving with
// one item, so a bulk sink's first call is not a single row.
func TestFirstChunkGrowsForAConsumerThatWantsFullChunks(t *testing.T) {
	p := sluice.New(context.Background())
	built := make(chan struct{})
	src := sluice.From(p, "src", func(_ context.Context, out *sluice.Emitter[int]) error {
		<-built // the first chunk was taken when From was called
		for i := range 10_000 {
			if !out.Send(i) {
				return nil
			}
		}
		return nil
	})
	var first int
	sluice.ForEachChunk(p, "bulk", src, 1, func(_ context.Context, items []int) error {
		if first == 0 {
			first = len(items)
		}
		return nil
	})
	close(built)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if first < 16 {
		t.Fatalf("first call got %d items, want a full chunk's worth", first)
	}
}

// OrderedMap hands on one result chunk per input chunk; its output's Chunk
// option still bounds what its consumer gets at once (a ForEachChunk
// behind it is promised no more than its producer's chunk size).
func TestOrderedMapOutputKeepsItsChunkSize(t *testing.T) {
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := sluice.New(t.Context())
				src := sluice.FromSlice(p, "src", ints(3000), sluice.Chunk(500))
				m := sluice.OrderedMap(p, "om", src, workers, double, sluice.Chunk(10))
				var mu sync.Mutex
				var got []int
				largest := 0
				sluice.ForEachChunk(p, "sink", m, 1, func(_ context.Context, items []int) error {
					mu.Lock()
					defer mu.Unlock()
					largest = max(largest, len(items))
					got = append(got, items...)
					return nil
				})
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				if largest > 10 {
					t.Fatalf("a call got %d items, want at most the 10 of OrderedMap's Chunk(10)", largest)
				}
				want := ints(3000)
				for i := range want {
					want[i] *= 2
				}
				if !slices.Equal(got, want) {
					t.Fatalf("got %d items (head %v), want %d doubled in order", len(got), head(got), len(want))
				}
			})
		})
	}
}

// FlatMap's emit returns false once the pipeline has stopped, as its doc
// says, so that an f emitting many results can stop at once — not only
// when its output chunk happens to fill.
func TestFlatMapEmitReturnsFalseOnceStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		p := sluice.New(ctx)
		at, gate := make(chan struct{}), make(chan struct{})
		var accepted atomic.Int64
		out := sluice.FlatMap(p, "expand", sluice.FromSlice(p, "src", ints(1)), 1, func(_ context.Context, v int, emit func(int) bool) error {
			close(at)
			<-gate
			for i := range 10 {
				if !emit(i) {
					return nil
				}
				accepted.Add(1)
			}
			return nil
		}, sluice.Chunk(64))
		sluice.Collect(p, "out", out)
		<-at
		cancel()
		synctest.Wait() // the stop is noticed
		close(gate)
		if err := p.Wait(); err != context.Canceled {
			t.Fatalf("Wait returned %v, want context.Canceled", err)
		}
		if got := accepted.Load(); got != 0 {
			t.Fatalf("emit accepted %d items after the stop, want 0", got)
		}
	})
}
