package par_test

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/seeds"
	"github.com/sluicehq/sluice/par"
)

// BenchmarkSumSpeedup measures par.Sum, par.Sum under GOMAXPROCS=1
// ("kernel": its serial loop alone) and FindSumSplit against FindSum (seed
// 003's serial loop) in pairs: each iteration times a batch of the
// serial sum and then a batch of the contender, alternating which goes
// first, and the reported "×serial" is the median of the per-iteration
// ratios serial time / contender time. On a shared machine whose load
// drifts within a run, paired ratios hold still where separate ns/op
// figures do not. Batches hold ≥ 16384 elements so that the two clock
// reads (~60 ns) stay under 1 % of a batch.
func BenchmarkSumSpeedup(b *testing.B) {
	for _, n := range []int{100, 10_000, 524_288, 1_000_000} {
		xs := ints(n)
		want := seeds.FindSum(xs)
		procs := runtime.GOMAXPROCS(0)
		for _, c := range []struct {
			name string
			sum  func([]int) int
		}{
			{"par", par.Sum[int]},
			{"kernel", par.Sum[int]}, // under GOMAXPROCS=1: par.Sum's own serial loop
			{"split", func(xs []int) int { return seeds.FindSumSplit(procs, xs) }},
		} {
			b.Run(fmt.Sprintf("n=%d/%s", n, c.name), func(b *testing.B) {
				if c.name == "kernel" {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
				}
				reps := max(1, 16384/n)
				batch := func(sum func([]int) int) time.Duration {
					start := time.Now()
					for range reps {
						if got := sum(xs); got != want {
							b.Fatalf("sum = %d, want %d", got, want)
						}
					}
					return time.Since(start)
				}
				var ratios []float64
				var spent time.Duration
				for b.Loop() {
					var ts, tc time.Duration
					if len(ratios)%2 == 0 {
						ts = batch(seeds.FindSum)
						tc = batch(c.sum)
					} else {
						tc = batch(c.sum)
						ts = batch(seeds.FindSum)
					}
					ratios = append(ratios, float64(ts)/float64(tc))
					spent += tc
				}
				slices.Sort(ratios)
				b.ReportMetric(ratios[len(ratios)/2], "×serial")
				b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N*reps*n), "ns/item")
			})
		}
	}
}
