package sluice_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice"
)

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
	got := sluice.Collect(p, "c", sluice.Merge(p, "merge", ins))
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

// An edge into a ForEachChunk with Gather(n) holds at least n items
// (DefaultBuffer), whatever stage produces it: Merge too.
func TestMergeIntoGatherHoldsNItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(t.Context())
		release := make(chan struct{})
		first := true
		ins := []sluice.Stream[int]{sluice.FromSlice(p, "a", ints(30_000)), sluice.FromSlice(p, "b", ints(30_000))}
		sluice.ForEachChunk(p, "sink", sluice.Merge(p, "merge", ins), 1, func(context.Context, []int) error {
			if first {
				first = false
				<-release
			}
			return nil
		}, sluice.Gather(20_000))
		synctest.Wait()
		capacity := -1
		for _, e := range p.Stats().Edges {
			if e.From == "merge" {
				capacity = e.ChunkCap * e.ChunkSize
			}
		}
		close(release)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if capacity < 20_000 {
			t.Fatalf("Merge's output holds %d items; want at least the 20000 of Gather(20000)", capacity)
		}
	})
}
