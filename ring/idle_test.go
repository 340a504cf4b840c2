//go:build unix

package ring

import (
	"context"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// maxIdleCPU bounds the CPU time the whole process may use while the
// consumers below sit blocked for idleWindow. A consumer's spin-and-yield
// budget is a few microseconds and it is spent before the window opens, so
// what remains is the runtime's own housekeeping (sysmon, timers).
const (
	idleWindow = time.Second
	maxIdleCPU = 5 * time.Millisecond
)

// TestIdleBlockedPopUsesNoCPU blocks one consumer of each kind in Pop on an
// empty queue for about a second of real time and measures, with getrusage,
// the CPU time the process uses meanwhile. A consumer that kept spinning or
// yielding would use a whole core (about a second). It is not parallel, so
// no other test of this package runs during the window.
func TestIdleBlockedPopUsesNoCPU(t *testing.T) {
	ctx := context.Background()
	qs := []queue[int]{NewSPSC[int](64), NewMPSC[int](64), NewMPMC[int](64)}
	var wg sync.WaitGroup
	for _, q := range qs {
		wg.Go(func() {
			v, err := q.Pop(ctx)
			if v != 1 || err != nil {
				t.Errorf("Pop: got %d, %v, want 1, nil", v, err)
			}
		})
	}
	for _, q := range qs {
		for parked(q) == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	runtime.GC() // so that no background marking runs in the window

	before := cpuTime(t)
	time.Sleep(idleWindow)
	used := cpuTime(t) - before

	for _, q := range qs {
		if err := q.Push(ctx, 1); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	t.Logf("CPU time used by the process while %d consumers were blocked for %v: %v", len(qs), idleWindow, used)
	if used > maxIdleCPU {
		t.Fatalf("CPU time while blocked: got %v, want ≤ %v", used, maxIdleCPU)
	}
}

// cpuTime returns the user plus system CPU time of the process so far.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
