package par

import "fmt"

// For calls f(i) once for every i in [0, n), blocking until all calls have
// returned. Calls for different i may run at the same time and in any
// order, so f must be safe for concurrent use; it should write only to
// memory that belongs to its i.
//
// The split follows the package's policy: the caller runs f alone for the
// first ~20 µs, and starts up to GOMAXPROCS-1 helper goroutines only if the
// rest is estimated at ≥ ~100 µs; Grain sets a fixed block size instead.
// Overhead is a few clock reads (~30 ns each) per call plus an indirect call
// (~2 ns) per item; For panics if n < 0 or f is nil.
func For(n int, f func(i int), opts ...Option) {
	if n < 0 {
		panic(fmt.Sprintf("par: For needs n ≥ 0, got %d", n))
	}
	if f == nil {
		panic("par: For called with a nil function")
	}
	p := schedule(n, newConfig(opts), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			f(i)
		}
	})
	if p.blocks == 0 {
		return
	}
	// Made only here, so that a loop that stays serial allocates nothing.
	run(p.workers, p.blocks, func(b int) {
		lo, hi := p.bounds(b, n)
		for i := lo; i < hi; i++ {
			f(i)
		}
	})
}

// Map returns a new slice whose element i is f(xs[i]), blocking until all
// calls have returned. Output order matches input order; the calls
// themselves may run at the same time and in any order, so f must be safe
// for concurrent use. Work is split as for For; Map panics if f is nil.
func Map[T, U any](xs []T, f func(T) U, opts ...Option) []U {
	if f == nil {
		panic("par: Map called with a nil function")
	}
	out := make([]U, len(xs))
	p := schedule(len(xs), newConfig(opts), func(lo, hi int) {
		for i, x := range xs[lo:hi] {
			out[lo+i] = f(x)
		}
	})
	if p.blocks == 0 {
		return out
	}
	run(p.workers, p.blocks, func(b int) {
		lo, hi := p.bounds(b, len(xs))
		for i, x := range xs[lo:hi] {
			out[lo+i] = f(x)
		}
	})
	return out
}

// Reduce combines zero and the elements of xs with f, as
// f(…f(f(zero, xs[0]), xs[1])…, xs[n-1]) would, blocking until done. It
// returns zero for an empty xs.
//
// f must be associative (f(f(a, b), c) == f(a, f(b, c))); it need not be
// commutative, and zero need not be its identity: Reduce folds each block of
// consecutive elements from its first element, then folds zero and the
// blocks' results left to right. Calls may run at the same time, so f must
// be safe for concurrent use. Work is split as for For; when the caller
// finishes alone the result is exactly the plain left fold.
//
// Floating-point addition is associative only up to rounding: a parallel
// float result may differ from the serial fold in the last bits, and,
// without Grain, from one call to the next (block boundaries follow the
// measured speed). With Grain the result depends only on xs, zero and the
// grain. Reduce allocates one T per block; it panics if f is nil.
func Reduce[T any](xs []T, zero T, f func(a, b T) T, opts ...Option) T {
	if f == nil {
		panic("par: Reduce called with a nil function")
	}
	acc := zero
	p := schedule(len(xs), newConfig(opts), func(lo, hi int) {
		for _, x := range xs[lo:hi] {
			acc = f(acc, x)
		}
	})
	if p.workers < 2 { // no plan, or a Grain plan on one goroutine
		for b := range p.blocks {
			acc = f(acc, foldBlock(xs, f, p, b))
		}
		return acc
	}
	partial := make([]T, p.blocks)
	run(p.workers, p.blocks, func(b int) { partial[b] = foldBlock(xs, f, p, b) })
	for _, r := range partial {
		acc = f(acc, r)
	}
	return acc
}

// foldBlock folds block b of plan p over xs, from the block's first element.
func foldBlock[T any](xs []T, f func(a, b T) T, p plan, b int) T {
	lo, hi := p.bounds(b, len(xs))
	r := xs[lo]
	for _, x := range xs[lo+1 : hi] {
		r = f(r, x)
	}
	return r
}
