package sluice_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice"
	"go.uber.org/goleak"
)

// TestAConstructionPanicLeavesNoGoroutineRunning builds stages, then one
// that panics (each way a construction can go wrong), recovers, and
// checks that the stages built before it no longer run.
func TestAConstructionPanicLeavesNoGoroutineRunning(t *testing.T) {
	bad := map[string]func(p *sluice.Pipeline, src sluice.Stream[int]){
		"workers":      func(p *sluice.Pipeline, src sluice.Stream[int]) { sluice.Map(p, "m", src, 0, double) },
		"nil function": func(p *sluice.Pipeline, src sluice.Stream[int]) { sluice.ForEach[int](p, "s", src, 1, nil) },
		"misfit option": func(p *sluice.Pipeline, src sluice.Stream[int]) {
			sluice.Map(p, "m", src, 1, double, sluice.Reorder(4))
		},
		"duplicate name": func(p *sluice.Pipeline, src sluice.Stream[int]) { sluice.Collect(p, "src", src) },
		"consumed twice": func(p *sluice.Pipeline, src sluice.Stream[int]) {
			sluice.Collect(p, "a", src)
			sluice.Collect(p, "b", src)
		},
		"bad batch size":   func(p *sluice.Pipeline, src sluice.Stream[int]) { sluice.Batch(p, "b", src, 0, 0) },
		"bad option value": func(p *sluice.Pipeline, src sluice.Stream[int]) { sluice.Map(p, "m", src, 1, double, sluice.Buffer(0)) },
	}
	for name, build := range bad {
		t.Run(name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			p := sluice.New(context.Background())
			src := sluice.FromSlice(p, "src", ints(100_000))
			mid := sluice.Map(p, "double", src, 2, double)
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("got no panic")
					}
				}()
				build(p, mid)
			}()
		})
	}
}
