package sluice_test

import (
	"context"
	"errors"
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
