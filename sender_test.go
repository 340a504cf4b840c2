package sluice_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

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
