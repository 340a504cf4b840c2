// Package par runs CPU-bound work over slices and index ranges on all CPUs,
// and on the calling goroutine alone when the work is too small to share.
//
// Goroutines make CPU-bound work faster only when each one has enough to
// do: a goroutine per element makes a sum of a million ints far slower than
// a plain loop, while one goroutine per CPU makes it faster. par splits work
// per CPU, never per element, has a serial cut-off so that small inputs
// never pay for goroutines, and runs a serial loop that is fast in its own
// right.
//
// # Goroutines and blocking
//
// Every function blocks until the whole result is ready. The calling
// goroutine does its share of the work, and at most GOMAXPROCS-1 helper
// goroutines (GOMAXPROCS is read at call time, never cached) join it; all
// have exited when the function returns. Work is cut into blocks of
// consecutive items handed out in turn through one shared counter, so a
// helper that starts late, or runs on a CPU shared with other processes,
// takes fewer blocks instead of holding the others up. The caller still
// waits, at the end, for the block each helper is working on.
//
// # When work is shared
//
// A helper goroutine pays only when the work left outlasts the time the
// helper takes to start running on another CPU: a few µs on bare metal,
// up to ~100 µs on a small virtual machine, where waking an idle vCPU is
// slow. The cut-offs below assume the slower case. When other processes keep every
// CPU busy, no split pays, and par cannot tell.
//
// Sum knows its cost per element (~0.2 ns), so it has a fixed cut-off:
// below 524288 elements it never starts a goroutine.
//
// For, Map and Reduce cannot know what f costs, so by default they measure.
// The caller runs items alone for ~20 µs, reading the clock after the first
// item and then whenever the count of items run has grown at most 8-fold
// (~30 ns per read; 4 reads for a loop of a hundred cheap items). If the
// loop is not done by then, the cost per item seen so far sets the plan for
// the rest: one extra worker per ~100 µs of estimated remaining work, up to
// GOMAXPROCS, taking blocks of ~10 µs. So a loop of less than ~120 µs never
// starts a goroutine. The Grain option replaces the measuring with a fixed
// block size, for reproducible splits or for a handful of long items, which
// the default would start on the caller alone.
//
// Each item of For, Map and Reduce costs an indirect call of f (~2 ns) that
// the compiler cannot inline; for an f of a few nanoseconds, a plain loop
// is faster than sharing it between two CPUs.
//
// # Panics
//
// The functions panic, with a message that starts with "par: ", on a nil
// function or a bad argument. A panic in f on a helper goroutine does not
// crash the program from there: no further blocks are handed out, and once
// every helper has exited the panic is raised again on the calling
// goroutine with the original value (the helper's stack is lost). A
// runtime.Goexit in f on a helper (t.FailNow, for one) is likewise repeated
// on the caller. A panic in f on the calling goroutine unwinds only after
// the helpers have exited.
package par
