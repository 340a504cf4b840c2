// Command sluice is seed 002's program written with sluice's core and
// nothing else: a From generator, Map with w workers, a summing Reduce.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/bench/internal/seed002"
)

func main() {
	a := seed002.Parse("sluice")
	nums := seed002.Numbers(a.List)
	p := sluice.New(context.Background(), sluice.Named("squares"))
	src := sluice.From(p, "generate", func(ctx context.Context, out *sluice.Emitter[int]) error {
		j := 0
		for range a.N {
			if !out.Send(nums[j]) {
				return ctx.Err()
			}
			if j++; j == len(nums) {
				j = 0
			}
		}
		return nil
	})
	sq := sluice.Map(p, "square", src, a.W, func(_ context.Context, v int) (int, error) { return v * v, nil })
	sum := sluice.Reduce(p, "sum", sq, 0, func(acc, v int) int { return acc + v })
	if err := p.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "sluice:", err)
		os.Exit(1)
	}
	seed002.Report(a, nums, sum.Value())
}
