package sluice_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

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

// TestAConstructionPanicInAStageFunctionFailsItsPipeline builds a stage
// from inside a running stage function — before Wait is called, and
// after Wait began — where the build panics (a name already used; a
// stage added after Wait). The panic must fail the pipeline as any panic
// in a stage function does: Wait returns a *PanicError naming the stage
// whose function panicked, and no goroutine is left. A hang (guard
// waiting, on the stage's own goroutine, for the goroutines that include
// it) fails the synctest bubble.
func TestAConstructionPanicInAStageFunctionFailsItsPipeline(t *testing.T) {
	// build makes the stage named "host" whose function calls misuse
	// once, on the 10th item.
	rows := map[string]func(p *sluice.Pipeline, misuse func()){
		"Map": func(p *sluice.Pipeline, misuse func()) {
			m := sluice.Map(p, "host", sluice.FromSlice(p, "src", ints(1000)), 2, func(_ context.Context, v int) (int, error) {
				if v == 10 {
					misuse()
				}
				return v, nil
			})
			sluice.ForEach(p, "sink", m, 1, func(context.Context, int) error { return nil })
		},
		"ForEach": func(p *sluice.Pipeline, misuse func()) {
			sluice.ForEach(p, "host", sluice.FromSlice(p, "src", ints(1000)), 2, func(_ context.Context, v int) error {
				if v == 10 {
					misuse()
				}
				return nil
			})
		},
		"source generator": func(p *sluice.Pipeline, misuse func()) {
			src := sluice.From(p, "host", func(_ context.Context, out *sluice.Emitter[int]) error {
				for i := range 1000 {
					if i == 10 {
						misuse()
					}
					if !out.Send(i) {
						return nil
					}
				}
				return nil
			})
			sluice.ForEach(p, "sink", src, 1, func(context.Context, int) error { return nil })
		},
		"ForEachChunk of batches": func(p *sluice.Pipeline, misuse func()) {
			b := sluice.Batch(p, "batch", sluice.FromSlice(p, "src", ints(1000)), 10, time.Hour)
			calls := 0
			sluice.ForEachChunk(p, "host", b, 1, func(_ context.Context, _ [][]int) error {
				if calls++; calls == 2 {
					misuse()
				}
				return nil
			})
		},
	}
	for name, build := range rows {
		for _, phase := range []string{"before Wait", "after Wait began"} {
			t.Run(name+"/"+phase, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					p := sluice.New(t.Context())
					var misuse func()
					if phase == "before Wait" {
						// "host" is taken: FromSlice panics.
						misuse = func() { sluice.FromSlice(p, "host", ints(1)) }
					} else {
						misuse = func() {
							// Until Wait has sealed the pipeline the build
							// panics with the duplicate name (recovered
							// here); then with "after Wait", not recovered.
							for {
								msg := func() (msg string) {
									defer func() {
										if r := recover(); r != nil {
											if msg, _ = r.(string); strings.Contains(msg, "after Wait") {
												panic(r)
											}
										}
									}()
									sluice.FromSlice(p, "host", ints(1))
									return ""
								}()
								if msg == "" {
									t.Error("building a stage with a used name did not panic")
									return
								}
								runtime.Gosched()
							}
						}
					}
					build(p, misuse)
					if phase == "before Wait" {
						<-p.Context().Done() // the panic stopped the pipeline
					}
					err := p.Wait()
					var pe *sluice.PanicError
					if !errors.As(err, &pe) {
						t.Fatalf("Wait returned %v (%T), want a *PanicError", err, err)
					}
					want := "already used"
					if phase != "before Wait" {
						want = "after Wait"
					}
					if msg, _ := pe.Value.(string); pe.Stage != "host" || !strings.Contains(msg, want) {
						t.Fatalf("got a panic in stage %q: %v, want one in stage \"host\" mentioning %q", pe.Stage, pe.Value, want)
					}
				})
			})
		}
	}
}
