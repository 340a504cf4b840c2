package sluice_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// Every stage with a function times its calls out the same way — FlatMap
// and ForEachChunk included: the error says so and wraps the function's.
func TestTimeoutIsOneStepForEveryStage(t *testing.T) {
	for _, row := range stageRows {
		if !row.policies && !strings.HasPrefix(row.name, "ForEachChunk") {
			continue // the hook runs in a sink of its own, without the option
		}
		t.Run(row.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := sluice.New(t.Context())
				row.build(p, ints(20), 1, func(ctx context.Context, v int) error {
					if v == 7 {
						<-ctx.Done()
						return ctx.Err()
					}
					return nil
				}, sluice.Timeout(time.Second))
				err := p.Wait()
				if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "call took longer than its Timeout(1s)") {
					t.Fatalf("Wait returned %v; want the call's timeout", err)
				}
			})
		})
	}
}
