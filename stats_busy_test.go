package sluice_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
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

// TestASinkThatGetsFewItemsIsLessBusyThanOneThatGetsThemAll counts the 1
// % of items a stage fails on in one Reduce while another Reduce does
// real work on the rest, with every CPU loaded: the counter's Busy must
// be a small part of the aggregator's.
func TestASinkThatGetsFewItemsIsLessBusyThanOneThatGetsThemAll(t *testing.T) {
	stop := loadCPUs()
	defer stop()
	const n = 400_000
	errOdd := errors.New("one in a hundred")
	p := sluice.New(context.Background())
	var dead sluice.Stream[sluice.Failed[int]]
	m := sluice.Map(p, "parse", sluice.FromSlice(p, "src", ints(n)), 1, func(_ context.Context, v int) (int, error) {
		if v%100 == 0 {
			return 0, errOdd
		}
		return v, nil
	}, sluice.DeadLetter(&dead))
	sum := sluice.Reduce(p, "aggregate", m, uint64(0), func(acc uint64, v int) uint64 {
		for i := range 64 { // some real work per item
			acc = acc*31 + uint64(v^i)
		}
		return acc
	})
	count := sluice.Reduce(p, "count-dead", dead, 0, func(acc int, _ sluice.Failed[int]) int { return acc + 1 })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	_ = sum.Value()
	if got := count.Value(); got != n/100 {
		t.Fatalf("counted %d dead letters, want %d", got, n/100)
	}
	snap := p.Stats()
	agg, cnt := stageNamed(t, snap, "aggregate"), stageNamed(t, snap, "count-dead")
	t.Logf("dead-letter counter Busy %v, aggregator %v", cnt.Busy, agg.Busy)
	if ratio := float64(cnt.Busy) / float64(agg.Busy); ratio > 0.3 {
		t.Fatalf("got the dead-letter counter Busy %v against the aggregator's %v (%.2f), want under 0.3", cnt.Busy, agg.Busy, ratio)
	}
}
