// Command hand is the reference sluice's machinery is measured against:
// seed 002's program written by hand for speed, values moved in slices of
// 256 recycled through a free list, squaring and summing inline, no call
// per value. Standard library only.
package main

import (
	"sync"

	"github.com/sluicehq/sluice/bench/internal/seed002"
)

// chunk is the slice size the reference moves.
const chunk = 256

func main() {
	a := seed002.Parse("hand")
	nums := seed002.Numbers(a.List)
	full := make(chan []int, 4*a.W)
	squared := make(chan []int, 4*a.W)
	free := make(chan []int, 8*a.W+2)
	get := func() []int {
		select {
		case s := <-free:
			return s[:0]
		default:
			return make([]int, 0, chunk)
		}
	}
	go func() {
		defer close(full)
		s, j := get(), 0
		for range a.N {
			s = append(s, nums[j])
			if j++; j == len(nums) {
				j = 0
			}
			if len(s) == chunk {
				full <- s
				s = get()
			}
		}
		if len(s) > 0 {
			full <- s
		}
	}()
	var wg sync.WaitGroup
	for range a.W {
		wg.Go(func() {
			for s := range full {
				for i, v := range s {
					s[i] = v * v
				}
				squared <- s
			}
		})
	}
	go func() {
		wg.Wait()
		close(squared)
	}()
	sum := 0
	for s := range squared {
		for _, v := range s {
			sum += v
		}
		select {
		case free <- s:
		default:
		}
	}
	seed002.Report(a, nums, sum)
}
