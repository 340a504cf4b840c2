// Command naive is seed 002's program as the seed wrote it, with plain Go
// channels: a generator, w workers squaring, one goroutine summing, one
// value per channel operation. Standard library only.
package main

import (
	"sync"

	"github.com/sluicehq/sluice/bench/internal/seed002"
)

func main() {
	a := seed002.Parse("naive")
	nums := seed002.Numbers(a.List)
	produce := make(chan int, a.Buffer)
	squares := make(chan int, a.Buffer)
	go func() {
		defer close(produce)
		j := 0
		for range a.N {
			produce <- nums[j]
			if j++; j == len(nums) {
				j = 0
			}
		}
	}()
	var wg sync.WaitGroup
	for range a.W {
		wg.Go(func() {
			for v := range produce {
				squares <- v * v
			}
		})
	}
	go func() {
		wg.Wait()
		close(squares)
	}()
	sum := 0
	for v := range squares {
		sum += v
	}
	seed002.Report(a, nums, sum)
}
