package seeds

import (
	"fmt"
	"sync"
)

// This file follows seed 003 (shared/seeds/003_36b83137c732f495.txt), "Using
// Goroutines is Slower??": three ways to sum a slice of ints, which
// par.Sum is measured against.

// FindSum is seed 003's serial sum: one loop, one accumulator, left to right.
func FindSum(list []int) int {
	sum := 0
	for _, number := range list {
		sum += number
	}
	return sum
}

// FindSumConc is seed 003's "concurrent" sum: one goroutine per element, each
// taking the write lock of a sync.RWMutex to add its number to a shared
// total. It starts len(list) goroutines and returns after all have finished.
// The seed measured it about 1000× slower than FindSum at 1M elements; it is
// kept as the seed wrote it (an RWMutex used only for writing) because that
// cost is the point of the seed.
func FindSumConc(list []int) int {
	sum := 0
	var rwm sync.RWMutex

	var wg sync.WaitGroup
	wg.Add(len(list))
	for _, number := range list {
		go func(number int) {
			defer wg.Done()
			rwm.Lock()
			defer rwm.Unlock()
			sum += number
		}(number)
	}
	wg.Wait()
	return sum
}

// FindSumSplit is the "split per CPU" sum from the discussion under seed 003:
// list is cut into at most n contiguous segments of equal size (the last may
// be shorter), one goroutine sums each segment into its own slot of a result
// slice, and the caller adds the slots after a WaitGroup wait. The seed calls
// it with n = runtime.NumCPU(); the benchmarks pass runtime.GOMAXPROCS(0).
// It starts one goroutine per segment even for tiny lists, and returns after
// all have finished. It panics if n < 1.
//
// The result slots are adjacent ints, so goroutines finishing at the same
// time write to one cache line; each writes once, so the seed's layout is
// kept.
func FindSumSplit(n int, list []int) int {
	if n < 1 {
		panic(fmt.Sprintf("seeds: FindSumSplit needs n ≥ 1, got %d", n))
	}
	// divide into non-overlapping segments
	segment := make([][]int, 0, n)
	size := (len(list) + n - 1) / n
	for i := 0; i < len(list); i += size {
		end := min(i+size, len(list))
		segment = append(segment, list[i:end])
	}

	// spread the load
	result := make([]int, n)
	var wg sync.WaitGroup
	wg.Add(len(segment))
	for i, values := range segment {
		go func(index int, sublist []int) {
			defer wg.Done()
			sum := 0
			for _, number := range sublist {
				sum += number
			}
			result[index] = sum
		}(i, values)
	}
	wg.Wait()

	// total intermediate results
	total := 0
	for _, segmentSum := range result {
		total += segmentSum
	}
	return total
}
