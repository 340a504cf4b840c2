package sluice_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// An option given to a stage it does not fit panics naming the stage, the
// option as it was written, and where it fits.
func TestAMisfitOptionPanicsNamingStageOptionAndWhereItFits(t *testing.T) {
	nop := func(context.Context, int) error { return nil }
	var dead sluice.Stream[sluice.Failed[int]]
	cases := []struct {
		name  string
		build func(p *sluice.Pipeline, opt sluice.StageOption)
		opt   sluice.StageOption
		want  string
	}{
		{"Reorder on Merge", merge, sluice.Reorder(8), `sluice: Merge "m": Reorder(8) applies only to OrderedMap`},
		{"Gather on Merge", merge, sluice.Gather(8), `sluice: Merge "m": Gather(8) applies only to ForEachChunk`},
		{"SkipErrors on Merge", merge, sluice.SkipErrors(),
			`sluice: Merge "m": SkipErrors() applies only to stages with a function that returns an error (Map, OrderedMap, Filter, FlatMap, ForEach, ForEachChunk)`},
		{"Auto on Partition", func(p *sluice.Pipeline, opt sluice.StageOption) {
			sluice.Partition(p, "m", sluice.FromSlice(p, "s", ints(1)), 2, func(v int) int { return v }, opt)
		}, sluice.Auto(1, 4), `sluice: Partition "m": Auto(1, 4) applies only to stages with a pool of workers (Map, OrderedMap, Filter, FlatMap, ForEach, ForEachChunk)`},
		{"Throttle on Batch", func(p *sluice.Pipeline, opt sluice.StageOption) {
			sluice.Batch(p, "m", sluice.FromSlice(p, "s", ints(1)), 2, time.Second, opt)
		}, sluice.Throttle(noLimit{}), `sluice: Batch "m": Throttle(sluice_test.noLimit) applies only to stages with a function that returns an error (Map, OrderedMap, Filter, FlatMap, ForEach, ForEachChunk)`},
		{"Retry on a source", func(p *sluice.Pipeline, opt sluice.StageOption) {
			sluice.FromSlice(p, "m", ints(1), opt)
		}, sluice.Retry(3, 0, time.Second), `sluice: source "m": Retry(3, 0s, 1s) applies only to stages with a function`},
		{"DeadLetter on Broadcast", func(p *sluice.Pipeline, opt sluice.StageOption) {
			sluice.Broadcast(p, "m", sluice.FromSlice(p, "s", ints(1)), 2, opt)
		}, sluice.DeadLetter(&dead), `sluice: Broadcast "m": DeadLetter applies only to stages with a function`},
		{"Timeout on Unbatch", func(p *sluice.Pipeline, opt sluice.StageOption) {
			sluice.Unbatch(p, "m", sluice.FromSlice(p, "s", [][]int{{1}}), opt)
		}, sluice.Timeout(time.Second), `sluice: Unbatch "m": Timeout(1s) applies only to stages with a function`},
		{"Buffer on ForEach", func(p *sluice.Pipeline, opt sluice.StageOption) {
			sluice.ForEach(p, "m", sluice.FromSlice(p, "s", ints(1)), 1, nop, opt)
		}, sluice.Buffer(10), `sluice: ForEach "m": Buffer(10) applies only to stages with an output edge (source, Map, OrderedMap, Filter, FlatMap, Batch, Unbatch, Partition, Broadcast, Merge, Keyed, Window); a sink has none: give it to the stage that feeds this one`},
		{"Reorder on Filter", func(p *sluice.Pipeline, opt sluice.StageOption) {
			sluice.Filter(p, "m", sluice.FromSlice(p, "s", ints(1)), 1, func(context.Context, int) (bool, error) { return true, nil }, opt)
		}, sluice.Reorder(3), `sluice: Filter "m": Reorder(3) applies only to OrderedMap`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := sluice.New(t.Context())
			mustPanic(t, func() { tc.build(p, tc.opt) }, tc.want)
			cancelAndDrain(p)
		})
	}
}

func merge(p *sluice.Pipeline, opt sluice.StageOption) {
	sluice.Merge(p, "m", []sluice.Stream[int]{sluice.FromSlice(p, "a", ints(1)), sluice.FromSlice(p, "b", ints(1))}, opt)
}

// Merge takes the options of an output edge: Buffer bounds its output
// (even into a Gather sink), Chunk sizes the chunks it passes on, and
// OnFull drops what its consumer has no room for.
func TestMergeTakesTheOptionsOfItsOutput(t *testing.T) {
	edgeOf := func(p *sluice.Pipeline) sluice.EdgeStats {
		for _, e := range p.Stats().Edges {
			if e.From == "m" {
				return e
			}
		}
		t.Fatal("no edge from m")
		return sluice.EdgeStats{}
	}
	t.Run("Buffer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := sluice.New(t.Context())
			release := make(chan struct{})
			ins := []sluice.Stream[int]{sluice.FromSlice(p, "a", ints(5000)), sluice.FromSlice(p, "b", ints(5000))}
			m := sluice.Merge(p, "m", ins, sluice.Buffer(300), sluice.Chunk(100))
			sluice.ForEachChunk(p, "sink", m, 1, func(context.Context, []int) error { <-release; return nil }, sluice.Gather(20_000))
			synctest.Wait()
			e := edgeOf(p)
			close(release)
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if e.ChunkCap != 3 || e.ChunkSize != 100 {
				t.Fatalf("Merge's output holds %d chunks of %d; want Buffer(300) in Chunk(100): 3 of 100", e.ChunkCap, e.ChunkSize)
			}
		})
	})
	t.Run("OnFull", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := sluice.New(t.Context())
			release := make(chan struct{})
			ins := []sluice.Stream[int]{sluice.FromSlice(p, "a", ints(1000)), sluice.FromSlice(p, "b", ints(1000))}
			m := sluice.Merge(p, "m", ins, sluice.OnFull(sluice.DropNewest), sluice.Chunk(10), sluice.Buffer(20))
			got := 0
			sluice.ForEach(p, "sink", m, 1, func(context.Context, int) error {
				if got++; got == 1 {
					<-release
				}
				return nil
			})
			synctest.Wait()
			close(release)
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if e := edgeOf(p); e.Dropped == 0 || int64(got)+e.Dropped != 2000 {
				t.Fatalf("received %d, dropped %d; want drops, and every item received or dropped", got, e.Dropped)
			}
		})
	})
}
