package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Scheduling constants for For, Map and Reduce without Grain (see the
// package doc). They were measured on the 2-vCPU VMs we develop on: there a
// `go` statement costs the caller ~1–3 µs (p90 ~15 µs, as it wakes an idle
// CPU), and the new goroutine starts running on the other CPU only after
// ~80–140 µs, the time to wake a halted vCPU; on bare metal both are a few
// µs. A helper therefore only helps once the work left outlasts that wake.
// Blocks are handed out dynamically, so a helper that starts late only takes
// fewer blocks; but the caller does wait, at the end, for a block that a
// helper holds while the OS has descheduled it, so on a machine whose CPUs
// are all busy no split pays.
const (
	// probeTime is how long the caller works alone before it considers
	// helpers: a loop that finishes within it never starts a goroutine.
	probeTime = 20 * time.Microsecond
	// helperWork is the estimated remaining work that each extra worker
	// must have for it to be started: about one vCPU wake.
	helperWork = 100 * time.Microsecond
	// blockTime is the target duration of one block taken from the shared
	// counter: long enough that the counter's contended atomic add
	// (~50–100 ns) is noise, short enough that workers finish together.
	blockTime = 10 * time.Microsecond
	// maxGrowth bounds how many items the probe runs between two clock
	// reads, as a multiple of the items already run, so that a loop whose
	// later items are far dearer than its first is still caught early.
	maxGrowth = 8
)

// epoch anchors the probe's clock: time.Since on a monotonic time reads one
// clock (~30 ns), where time.Now reads two.
var epoch = time.Now()

// plan says how the rest of a loop over [0, n) is split: blocks of grain
// items starting at start, taken in turn by workers goroutines. A plan with
// no blocks means there is nothing left to do.
type plan struct {
	start, grain, blocks, workers int
}

// bounds returns the items [lo, hi) of block b of a loop over [0, n).
func (p plan) bounds(b, n int) (lo, hi int) {
	lo = p.start + b*p.grain
	return lo, min(lo+p.grain, n)
}

// schedule decides how a loop over [0, n) is run. With a grain set it only
// computes the plan. Without, it runs a growing prefix of the loop through
// serial(lo, hi) on the calling goroutine, reading the clock between calls,
// until the loop is done or probeTime has passed; it then either finishes
// the loop through serial too, when decide says the rest is too little to
// share, or returns decide's plan for the rest.
func schedule(n int, c config, serial func(lo, hi int)) plan {
	if n <= 0 {
		return plan{}
	}
	if c.grain > 0 {
		blocks := (n-1)/c.grain + 1
		workers := 1
		if n/2 >= c.grain { // n ≥ 2·grain, without overflow
			workers = min(runtime.GOMAXPROCS(0), blocks)
		}
		return plan{grain: c.grain, blocks: blocks, workers: workers}
	}

	start := time.Since(epoch)
	var elapsed time.Duration
	done, next := 0, 1
	for {
		serial(done, next)
		done = next
		if done == n {
			return plan{}
		}
		elapsed = time.Since(epoch) - start
		if elapsed >= probeTime {
			break
		}
		// Read the clock next when probeTime should have passed at the
		// rate seen so far, but after at most maxGrowth× the items run (a
		// clock too coarse to see the items so far also lands here).
		want := done * maxGrowth
		if perItem := float64(elapsed) / float64(done); perItem > 0 {
			if w := float64(done) + float64(probeTime-elapsed)/perItem; w < float64(want) {
				want = int(w)
			}
		}
		next = min(max(want, done+1), n)
	}

	p := decide(n, done, elapsed, runtime.GOMAXPROCS(0))
	if p.blocks == 0 {
		serial(done, n)
	}
	return p
}

// decide plans the items [done, n) of a loop whose first done items took
// elapsed on one goroutine, given procs usable CPUs: one worker, plus one
// more per helperWork of estimated remaining work, at most procs and at most
// one per item; blocks that take about blockTime each. As w ≥ 2 workers
// share at least (w-1)·helperWork, each gets ≥ helperWork/2 of work, ~5
// blocks or more: enough for them to finish close together. A plan with no blocks means
// "finish on the caller alone".
func decide(n, done int, elapsed time.Duration, procs int) plan {
	rest := n - done
	perItem := max(float64(elapsed)/float64(done), 1) // ns; a clock step may read 0
	workers := procs
	if extra := perItem * float64(rest) / float64(helperWork); extra < float64(procs-1) {
		workers = 1 + int(extra)
	}
	workers = min(workers, rest)
	if workers < 2 {
		return plan{}
	}
	grain := int(float64(blockTime)/perItem) + 1
	return plan{start: done, grain: grain, blocks: (rest-1)/grain + 1, workers: workers}
}

// panicked carries the value of a panic recovered on a helper goroutine.
// goexit is set instead when the helper ended through runtime.Goexit (or a
// panic whose recovered value is nil).
type panicked struct {
	value  any
	goexit bool
}

// run calls body(b) exactly once for each block b in [0, blocks), on the
// calling goroutine and on up to workers-1 helper goroutines that it starts.
// Blocks are handed out in increasing order through one shared counter, so a
// worker that starts late or runs slowly simply takes fewer blocks.
//
// run returns only after every helper has exited. A panic in body on a
// helper stops the handing out of blocks and is re-raised on the calling
// goroutine with its original value once all helpers have exited; a
// runtime.Goexit on a helper is re-raised as runtime.Goexit on the caller. A
// panic or Goexit on the calling goroutine itself unwinds only after all
// helpers have exited. If several goroutines panic, the first recorded wins.
func run(workers, blocks int, body func(b int)) {
	workers = min(workers, blocks)
	if workers <= 1 {
		for b := range blocks {
			body(b)
		}
		return
	}

	var (
		next   atomic.Int64 // the next block to hand out; ≥ blocks means stop
		failed atomic.Pointer[panicked]
		wg     sync.WaitGroup
	)
	stop := func() { next.Store(int64(blocks)) } // a later Add still reads ≥ blocks
	work := func() {
		for {
			b := next.Add(1) - 1
			if b >= int64(blocks) {
				return
			}
			body(int(b))
		}
	}

	wg.Add(workers - 1)
	for range workers - 1 {
		go func() {
			defer wg.Done()
			normal := false
			defer func() {
				if normal {
					return
				}
				v := recover()
				failed.CompareAndSwap(nil, &panicked{value: v, goexit: v == nil})
				stop()
			}()
			work()
			normal = true
		}()
	}

	callerDone := false
	defer func() {
		if !callerDone { // the caller's own block panicked or called Goexit
			stop()
			wg.Wait()
		}
	}()
	work()
	callerDone = true
	wg.Wait()

	if p := failed.Load(); p != nil {
		if p.goexit {
			runtime.Goexit()
		}
		panic(p.value)
	}
}
