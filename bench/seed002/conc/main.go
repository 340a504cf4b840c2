// Command conc is seed 002's program written with sourcegraph/conc, which
// has no channel stages: each value is a task of a stream limited to w
// goroutines, and the stream's callbacks, which run one at a time in
// submission order, do the summing fan-in.
package main

import (
	"github.com/sluicehq/sluice/bench/internal/seed002"
	"github.com/sourcegraph/conc/stream"
)

func main() {
	a := seed002.Parse("conc")
	nums := seed002.Numbers(a.List)
	s := stream.New().WithMaxGoroutines(a.W)
	sum, j := 0, 0
	for range a.N {
		v := nums[j]
		s.Go(func() stream.Callback {
			sq := v * v
			return func() { sum += sq }
		})
		if j++; j == len(nums) {
			j = 0
		}
	}
	s.Wait()
	seed002.Report(a, nums, sum)
}
