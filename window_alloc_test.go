package sluice_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// A Window stage's memory is O(keys × open windows): once warm, more
// items, and more windows opened and emitted one after another, allocate
// next to nothing (window records and the heap of due windows are
// reused). Counted with runtime.MemStats over a short and a long run of
// the same keys; the difference per extra item must stay under 0.01.
func TestWindowAllocatesNothingPerItemOnceWarm(t *testing.T) {
	type ev struct {
		key int
		at  int64
	}
	run := func(n int) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		p := sluice.New(context.Background())
		src := sluice.From(p, "in", func(ctx context.Context, out *sluice.Emitter[ev]) error {
			for i := range n {
				// 100 keys, 1 µs of event time apart, 10 µs of disorder.
				if !out.Send(ev{key: i % 100, at: int64(i)*1000 - int64(i%7)*1500}) {
					return ctx.Err()
				}
			}
			return nil
		})
		panes := sluice.Window(p, "w", src, 1, sluice.WindowSpec[ev, int, int]{
			Windows:    sluice.Tumbling(time.Millisecond),
			Key:        func(e ev) int { return e.key },
			Time:       func(e ev) time.Time { return time.Unix(0, e.at) },
			Fold:       func(a *int, _ ev) { *a++ },
			OutOfOrder: 20 * time.Microsecond,
		})
		total := sluice.Reduce(p, "sum", panes, 0, func(acc int, pn sluice.Pane[int, int]) int { return acc + pn.Acc })
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if total.Value() != n {
			t.Fatalf("panes hold %d items, want %d", total.Value(), n)
		}
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	const short, long = 100_000, 500_000
	run(short) // warm the runtime
	a, b := run(short), run(long)
	if per := (float64(b) - float64(a)) / (long - short); per > 0.01 {
		t.Errorf("%d allocations for %d items, %d for %d: %.3f per extra item, want < 0.01", a, short, b, long, per)
	}
}
