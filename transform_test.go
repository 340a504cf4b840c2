package sluice_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice"
)

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
