package sluice_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// loadCPUs keeps every processor busy with spinning goroutines until the
// returned function is called, as other work in the process would.
func loadCPUs() (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for !done.Load() {
				for range 1000 {
				}
			}
		})
	}
	return func() { done.Store(true); wg.Wait() }
}

func stageNamed(t *testing.T, snap sluice.Snapshot, name string) sluice.StageStats {
	t.Helper()
	for _, st := range snap.Stages {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no stage %q in the snapshot", name)
	return sluice.StageStats{}
}

// TestAnIdleSinkIsNotReportedBusy feeds a sink that does nothing one item
// a millisecond while other goroutines load every CPU: its time waiting
// for input, yields before parking included, is not work.
func TestAnIdleSinkIsNotReportedBusy(t *testing.T) {
	stop := loadCPUs()
	defer stop()
	p := sluice.New(context.Background())
	src := sluice.From(p, "tick", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := range 150 {
			if !out.Send(i) || !out.Flush() {
				return nil
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	sluice.ForEach(p, "nop", src, 1, func(context.Context, int) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	st := stageNamed(t, p.Stats(), "nop")
	life := st.Busy + st.Blocked
	t.Logf("Busy %v of %v", st.Busy, life)
	if share := float64(st.Busy) / float64(life); share > 0.25 {
		t.Fatalf("got Busy %v of %v (%.0f %%) for a sink that does nothing, want under 25 %%", st.Busy, life, 100*share)
	}
}

// TestASinkThatGetsFewItemsIsLessBusyThanOneThatGetsThemAll sends the 1
// % of items a stage fails on to one Reduce and the rest to another; each
// function takes the same 10 µs an item, in synctest's time, which passes
// only while every goroutine waits: Busy is then exactly the time spent in
// the functions (the hand-offs take no fake time), so the counter's Busy
// is its own 200 items' worth, not the time it waited for them while the
// aggregator worked, whatever the machine or the race detector does to
// real time.
func TestASinkThatGetsFewItemsIsLessBusyThanOneThatGetsThemAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, cost = 20_000, 10 * time.Microsecond
		errOdd := errors.New("one in a hundred")
		p := sluice.New(t.Context())
		var dead sluice.Stream[sluice.Failed[int]]
		m := sluice.Map(p, "parse", sluice.FromSlice(p, "src", ints(n)), 1, func(_ context.Context, v int) (int, error) {
			if v%100 == 0 {
				return 0, errOdd
			}
			return v, nil
		}, sluice.DeadLetter(&dead))
		sum := sluice.Reduce(p, "aggregate", m, 0, func(acc, v int) int {
			time.Sleep(cost)
			return acc + v
		})
		count := sluice.Reduce(p, "count-dead", dead, 0, func(acc int, _ sluice.Failed[int]) int {
			time.Sleep(cost)
			return acc + 1
		})
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if got, want := sum.Value(), sumTo(n)-100*sumTo(n/100); got != want {
			t.Fatalf("aggregated %d, want %d", got, want)
		}
		if got := count.Value(); got != n/100 {
			t.Fatalf("counted %d dead letters, want %d", got, n/100)
		}
		snap := p.Stats()
		agg, cnt := stageNamed(t, snap, "aggregate"), stageNamed(t, snap, "count-dead")
		t.Logf("dead-letter counter Busy %v, aggregator %v", cnt.Busy, agg.Busy)
		if want := (n - n/100) * cost; agg.Busy != want {
			t.Errorf("got the aggregator Busy %v, want %v: its %d calls of %v", agg.Busy, want, n-n/100, cost)
		}
		if want := n / 100 * cost; cnt.Busy != want {
			t.Errorf("got the dead-letter counter Busy %v, want %v: its %d calls of %v, not its waits", cnt.Busy, want, n/100, cost)
		}
	})
}
