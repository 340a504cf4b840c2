package sluice_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// A Throttle that holds the stage below what one worker does: shed from
// 16 to what the rate needs, the count does not grow back into the
// Throttle (workers added would only wait on it).
func TestAutoDoesNotGrowBackIntoAThrottle(t *testing.T) {
	counts, _, last := autoRun(t, 50, 16, func() (func(context.Context, int) (int, error), []sluice.StageOption) {
		lim := lockedTokens{make(chan struct{}, 1), &tokens{gap: 10 * time.Millisecond}} // 100 a second
		call := func(_ context.Context, v int) (int, error) { time.Sleep(time.Millisecond); return v, nil }
		return call, []sluice.StageOption{sluice.Auto(1, 16), sluice.Throttle(lim)}
	})
	// 100 calls a second of 1 ms need one worker, which waits on the
	// limiter 9 ms in 10.
	if i := slices.Index(counts, 1); i < 0 || slices.Max(counts[i:]) > 1 {
		t.Errorf("workers %v: want them shed to 1 and never added back", counts)
	}
	if last < 150 {
		t.Errorf("%d items in the last 1.7 s, want about 170 at 100 a second", last)
	}
}
