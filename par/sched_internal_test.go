package par

import (
	"testing"
	"time"
)

func TestScheduleRunsAQuickLoopOnTheCallerAlone(t *testing.T) {
	var calls []int
	p := schedule(100, config{}, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			calls = append(calls, i)
		}
	})
	// 100 appends take far less than probeTime, unless the test is
	// descheduled mid-loop; then the rest is shared and plan has blocks.
	if p.blocks == 0 && len(calls) != 100 {
		t.Fatalf("serial ran %d items and plan is empty, want 100", len(calls))
	}
	for i, c := range calls {
		if c != i {
			t.Fatalf("serial ran item %d as call %d; want items in order", c, i)
		}
	}
}

func TestScheduleStopsProbingAfterOneSlowItem(t *testing.T) {
	ran := 0
	p := schedule(4, config{}, func(lo, hi int) {
		ran += hi - lo
		time.Sleep(2 * probeTime)
	})
	// After one item of ≥ 2·probeTime, three more need three workers; on a
	// one-CPU machine decide may still keep them on the caller.
	if p.blocks == 0 {
		if ran != 4 {
			t.Errorf("empty plan after %d items, want all 4 run", ran)
		}
		return
	}
	if ran != 1 || p.start != 1 || p.grain != 1 || p.blocks != 3 {
		t.Errorf("ran %d, plan %+v; want 1 item run, then blocks of 1 from 1", ran, p)
	}
}

func TestDecideKeepsASmallRestOnTheCaller(t *testing.T) {
	// 1 ns per item and 1000 items left: 1 µs, far under helperWork.
	if p := decide(2000, 1000, time.Microsecond, 8); p.blocks != 0 {
		t.Errorf("plan %+v, want none", p)
	}
}

func TestDecideGivesEachHelperEnoughWork(t *testing.T) {
	// 1 µs per item, 250 items left = 250 µs: 1 + 250/100 = 3 workers.
	if p := decide(260, 10, 10*time.Microsecond, 8); p.workers != 3 {
		t.Errorf("plan %+v, want 3 workers", p)
	}
	// 1 µs per item, 90 items left = 90 µs: under helperWork, no helper.
	if p := decide(100, 10, 10*time.Microsecond, 8); p.blocks != 0 {
		t.Errorf("plan %+v, want none", p)
	}
	// Plenty of work: bounded by procs.
	if p := decide(1e6, 10, 10*time.Microsecond, 2); p.workers != 2 {
		t.Errorf("plan %+v, want 2 workers", p)
	}
	// Fewer items than procs: at most one worker per item.
	if p := decide(4, 1, time.Second, 8); p.workers != 3 {
		t.Errorf("plan %+v, want 3 workers", p)
	}
}

func TestDecideCutsBlocksOfBlockTime(t *testing.T) {
	// 1 ns per item, 10M left: blocks of blockTime/1ns+1 items.
	p := decide(10_000_000+20000, 20000, 20*time.Microsecond, 2)
	want := int(blockTime/time.Nanosecond) + 1
	if p.grain != want || p.start != 20000 || p.blocks != (10_000_000-1)/want+1 {
		t.Errorf("plan %+v, want grain %d from 20000", p, want)
	}
	// Ends exactly at n.
	if lo, hi := p.bounds(p.blocks-1, 10_020_000); hi != 10_020_000 || hi-lo > want {
		t.Errorf("last block [%d, %d), want one ending at 10020000", lo, hi)
	}
	// Items dearer than blockTime: blocks of one.
	if p := decide(100, 1, time.Millisecond, 2); p.grain != 1 || p.blocks != 99 {
		t.Errorf("plan %+v, want 99 blocks of 1", p)
	}
}

func TestRunCallsEveryBlockOnceForAnyWorkerCount(t *testing.T) {
	for _, workers := range []int{0, 1, 2, 3, 16} {
		for _, blocks := range []int{0, 1, 2, 5, 1000} {
			seen := make([]int32, blocks)
			done := make(chan int, blocks)
			run(workers, blocks, func(b int) { done <- b })
			close(done)
			for b := range done {
				seen[b]++
			}
			for b, c := range seen {
				if c != 1 {
					t.Fatalf("workers=%d blocks=%d: block %d ran %d times, want 1", workers, blocks, b, c)
				}
			}
		}
	}
}
