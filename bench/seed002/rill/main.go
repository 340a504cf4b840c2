// Command rill is seed 002's program written with destel/rill: Generate,
// Map with w goroutines, a one-goroutine ForEach that sums.
package main

import (
	"fmt"
	"os"

	"github.com/destel/rill"
	"github.com/sluicehq/sluice/bench/internal/seed002"
)

func main() {
	a := seed002.Parse("rill")
	nums := seed002.Numbers(a.List)
	src := rill.Generate(func(send func(int), _ func(error)) {
		j := 0
		for range a.N {
			send(nums[j])
			if j++; j == len(nums) {
				j = 0
			}
		}
	})
	sq := rill.Map(src, a.W, func(v int) (int, error) { return v * v, nil })
	sum := 0
	if err := rill.ForEach(sq, 1, func(v int) error {
		sum += v
		return nil
	}); err != nil {
		fmt.Fprintln(os.Stderr, "rill:", err)
		os.Exit(1)
	}
	seed002.Report(a, nums, sum)
}
