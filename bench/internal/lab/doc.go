// Package lab is the benchmark lab (`go run ./bench/cmd/lab`): every experiment of the seeds
// (shared/seeds), run side by side with sluice, with peer libraries and,
// for seed 002, with Rust reference programs, and reported as terminal
// tables, JSON, Markdown or one self-contained HTML page with charts.
//
// # How a figure is taken
//
// An experiment is a list of cases; a case is one variant doing a fixed
// amount of work (Items items per round). In-process cases are set up once,
// run one warm-up round, then Count runs, each of as many rounds as fill
// Config.Time (or exactly one round for cases that say so). A run's cost per
// item is its wall time divided by the items it moved; heap allocations per
// item come from runtime.MemStats read before and after the run, so they
// count every goroutine's allocations. A row reports the median and the
// range over the runs and its speed-up against the baseline of its group,
// measured in the same process, in the same invocation.
//
// Process cases (seed 002's whole programs) run each variant as its own
// process, Count times in turn, and take wall time and user+sys CPU time
// from the child's rusage, as the seed did with /usr/bin/time. Max RSS is
// the VmHWM the child prints: its own peak since exec (rusage's max RSS of a
// child started by Go includes the parent's, handed on by vfork+exec).
//
// # Correctness
//
// Every round checks its answer (a sum, a count, an order, a digest), and a
// case whose round fails, panics or does not finish within Config.Timeout
// is reported as FAILED; Main then exits 1. A case that cannot run here
// (cargo missing, a size the variant cannot finish at) is reported as
// skipped, with the reason, and does not fail the run.
//
// A run that times out leaves its goroutines blocked: Main reports FAILED
// and exits, and tests fail; nothing else is affected.
package lab
