package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// checkEdgesAddUp fails unless every edge of the snapshot accounts for
// every item handed to it: received, still queued, or discarded.
func checkEdgesAddUp(t *testing.T, snap sluice.Snapshot) {
	t.Helper()
	for _, e := range snap.Edges {
		if e.Sent != e.Received+e.Depth+e.Dropped {
			t.Fatalf("edge %s→%s: sent %d, want received %d + depth %d + dropped %d = %d",
				e.From, e.To, e.Sent, e.Received, e.Depth, e.Dropped, e.Received+e.Depth+e.Dropped)
		}
	}
}

// After Wait, every stage of the harness reports itself finished and every
// edge's counts add up: drained after a clean run, and accounting for
// what was left queued after a failure.
func TestContractStatsAddUpAfterWait(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("fail=%v", fail), func(t *testing.T) {
			forEachStage(t, func(t *testing.T, row stageRow, n int) {
				if fail && !row.errs {
					t.Skip("the stage's function returns no error")
				}
				p := sluice.New(t.Context())
				errStop := errors.New("stop")
				out := row.build(p, ints(harnessItems), n, func(_ context.Context, v int) error {
					if fail && v == 100 {
						return errStop
					}
					return nil
				})
				err := p.Wait()
				if out != nil {
					out()
				}
				snap := p.Stats()
				if !snap.Done || (err == nil) == fail {
					t.Fatalf("Wait returned %v; snapshot done %v", err, snap.Done)
				}
				for _, s := range snap.Stages {
					if s.Running != 0 || s.Waiting != 0 || s.WaitingForRoom != 0 {
						t.Fatalf("stage %s after Wait: running %d, waiting %d (%d for room), want 0", s.Name, s.Running, s.Waiting, s.WaitingForRoom)
					}
				}
				checkEdgesAddUp(t, snap)
				if fail {
					return
				}
				for _, e := range snap.Edges {
					if e.Depth != 0 || e.Dropped != 0 || e.Sent != e.Received {
						t.Fatalf("edge %s→%s after a clean run: %+v, want every item received", e.From, e.To, e)
					}
				}
			})
		})
	}
}

// Under every overflow policy, a stage's Out counts every item it handed
// to its output edge, and the edge's Dropped those it discarded: a Map's
// Out equals its In, and the edge's counts add up.
func TestStatsCountDroppedItemsAsSentUnderEveryPolicy(t *testing.T) {
	for _, policy := range []sluice.Overflow{sluice.Block, sluice.DropNewest, sluice.DropOldest} {
		for _, n := range []int{1, 4} {
			t.Run(fmt.Sprintf("%v/workers=%d", policy, n), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					const items = 10_000
					p := sluice.New(t.Context())
					src := sluice.FromSlice(p, "src", ints(items))
					m := sluice.Map(p, "stage", src, n, double, sluice.Buffer(64), sluice.Chunk(16), sluice.OnFull(policy))
					gate := make(chan struct{})
					var got int
					sluice.ForEach(p, "sink", m, 1, func(context.Context, int) error {
						<-gate
						got++
						return nil
					})
					synctest.Wait() // the source and the stage are done or blocked
					close(gate)
					if err := p.Wait(); err != nil {
						t.Fatal(err)
					}
					snap := p.Stats()
					st := snap.Stages[1]
					if st.In != items || st.Out != items {
						t.Fatalf("stage in %d, out %d (dropped %d); want %d in and %d out", st.In, st.Out, st.Dropped, items, items)
					}
					e := snap.Edges[1]
					checkEdgesAddUp(t, snap)
					if e.Received != int64(got) || e.Dropped != st.Dropped || (policy == sluice.Block) != (e.Dropped == 0) {
						t.Fatalf("edge %+v; stage dropped %d; %d items reached the sink", e, st.Dropped, got)
					}
				})
			})
		}
	}
}

// TestStatsBusyAndBlockedNeverFall takes snapshots as fast as it can while
// a pipeline's stages keep starting and ending short waits (a source that
// pauses, workers that outpace it): per stage, Busy and Blocked are
// cumulative and must never be lower than in the snapshot before. They
// fell when a wait ended between the reads of a worker's blocked total and
// of its current wait.
func TestStatsBusyAndBlockedNeverFall(t *testing.T) {
	p := sluice.New(t.Context())
	src := sluice.From(p, "src", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := range 20000 {
			if !out.Send(i) {
				return nil
			}
			if i%16 == 0 {
				out.Flush()
				runtime.Gosched()
			}
		}
		return nil
	})
	m := sluice.Map(p, "inc", src, 2, func(_ context.Context, v int) (int, error) { return v + 1, nil })
	sum := sluice.Reduce(p, "sum", m, 0, func(a, v int) int { return a + v })
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	prev := map[string]sluice.StageStats{}
	falls := 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		for _, st := range p.Stats().Stages {
			if old, ok := prev[st.Name]; ok && (st.Busy < old.Busy || st.Blocked < old.Blocked) {
				falls++
				if falls <= 3 {
					t.Errorf("stage %s: Busy %v → %v, Blocked %v → %v: a cumulative time fell", st.Name, old.Busy, st.Busy, old.Blocked, st.Blocked)
				}
			}
			prev[st.Name] = st
		}
	}
	if want := 20000 * 20001 / 2; sum.Value() != want {
		t.Fatalf("sum %d, want %d", sum.Value(), want)
	}
	if falls > 0 {
		t.Fatalf("%d snapshots had a cumulative time lower than the one before", falls)
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

func TestSnapshotStageFindsAStageByName(t *testing.T) {
	p := sluice.New(context.Background())
	sluice.ForEach(p, "sink", sluice.FromSlice(p, "src", ints(5)), 1, func(context.Context, int) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	snap := p.Stats()
	if st, ok := snap.Stage("sink"); !ok || st.Name != "sink" || st.In != 5 {
		t.Fatalf("got %+v, %v; want the sink's stats with In 5", st, ok)
	}
	if st, ok := snap.Stage("nope"); ok || st.Name != "" {
		t.Fatalf("got %+v, %v; want nothing for a stage that does not exist", st, ok)
	}
}

func TestAStageAfterBatchCountsTheItemsOfItsBatches(t *testing.T) {
	p := sluice.New(context.Background())
	b := sluice.Batch(p, "batch", sluice.FromSlice(p, "src", ints(1000)), 64, time.Hour)
	sluice.ForEach(p, "store", b, 3, func(context.Context, []int) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	snap := p.Stats()
	st, _ := snap.Stage("store")
	if st.In != 16 || st.InItems != 1000 {
		t.Fatalf("got In %d InItems %d, want 16 batches holding 1000 items", st.In, st.InItems)
	}
	bt, _ := snap.Stage("batch")
	if bt.In != 1000 || bt.InItems != 1000 {
		t.Fatalf("got the batch stage's In %d InItems %d, want 1000 and 1000", bt.In, bt.InItems)
	}
}
