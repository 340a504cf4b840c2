package sluice_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice"
)

// Throttle is not an error option: a stage given only Throttle fails with
// the error it fails with without it. A ForEachChunk call that stored some
// items and failed one fails the pipeline with its ItemErrors either way.
func TestThrottleAloneKeepsTheErrorAPartialFailureReturns(t *testing.T) {
	run := func(opts ...sluice.StageOption) error {
		p := sluice.New(t.Context())
		src := sluice.FromSlice(p, "src", []string{"one", "two", "three"}, sluice.Chunk(3))
		sluice.ForEachChunk(p, "under", src, 1, func(_ context.Context, items []string) error {
			errs := make(sluice.ItemErrors, len(items))
			for i, v := range items {
				if v == "two" {
					errs[i] = errors.New("item two failed")
				}
			}
			return errs
		}, opts...)
		return p.Wait()
	}
	plain := run()
	throttled := run(sluice.Throttle(noLimit{}))
	var ie sluice.ItemErrors
	if !errors.As(throttled, &ie) || len(ie) != 3 {
		t.Fatalf("with Throttle: Wait returned %v; want the call's ItemErrors of 3 entries", throttled)
	}
	if throttled.Error() != plain.Error() {
		t.Fatalf("with Throttle: Wait returned %q; without: %q; want the same", throttled, plain)
	}
}

// For every stage with a function, Throttle alone leaves the error a
// failed item fails the pipeline with as it is without Throttle.
func TestThrottleAloneKeepsTheErrorOfEveryStage(t *testing.T) {
	for _, row := range stageRows {
		if !row.policies && !strings.HasPrefix(row.name, "ForEachChunk") {
			continue // the hook runs in a sink of its own, without the option
		}
		t.Run(row.name, func(t *testing.T) {
			run := func(opts ...sluice.StageOption) error {
				p := sluice.New(t.Context())
				row.build(p, ints(50), 1, func(_ context.Context, v int) error {
					if v == 7 {
						return errBad
					}
					return nil
				}, opts...)
				return p.Wait()
			}
			plain, throttled := run(), run(sluice.Throttle(noLimit{}))
			if plain == nil || throttled == nil || throttled.Error() != plain.Error() || !errors.Is(throttled, errBad) {
				t.Fatalf("with Throttle: Wait returned %v; without: %v; want the same error, wrapping %v", throttled, plain, errBad)
			}
		})
	}
}

// countingLimiter counts its waits and never makes one wait.
type countingLimiter struct{ n atomic.Int64 }

func (l *countingLimiter) Wait(context.Context) error { l.n.Add(1); return nil }

// Throttle waits before every call, retries included, wherever it is
// given among the options: the chain puts it inside Retry.
func TestThrottleWaitsBeforeEveryAttempt(t *testing.T) {
	for _, order := range []string{"Throttle first", "Retry first"} {
		t.Run(order, func(t *testing.T) {
			lim := &countingLimiter{}
			opts := []sluice.StageOption{sluice.Throttle(lim), sluice.Retry(3, 0, 0), sluice.SkipErrors()}
			if order == "Retry first" {
				opts = []sluice.StageOption{sluice.Retry(3, 0, 0), sluice.SkipErrors(), sluice.Throttle(lim)}
			}
			p := sluice.New(t.Context())
			var calls atomic.Int64
			sluice.ForEach(p, "f", sluice.FromSlice(p, "src", ints(10)), 2, func(_ context.Context, v int) error {
				calls.Add(1)
				if v%2 == 0 {
					return errBad // three attempts each
				}
				return nil
			}, opts...)
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if calls.Load() != 5*3+5 || lim.n.Load() != calls.Load() {
				t.Fatalf("%d calls, %d waits; want 20 calls (5 items × 3 attempts + 5) and a wait before each", calls.Load(), lim.n.Load())
			}
		})
	}
}
