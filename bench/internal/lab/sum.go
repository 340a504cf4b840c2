package lab

import (
	"fmt"
	"math/rand/v2"
	"runtime"

	"github.com/sluicehq/sluice/internal/seeds"
	"github.com/sluicehq/sluice/par"
)

// Seed 003, CPU-bound: summing a slice of ints in [0, 1e6), serially, with
// a goroutine and a mutex per element, split per CPU, and with par.Sum.

type sumVariant struct {
	name     string
	baseline bool
	sum      func([]int) int
	limit    func(Mode) int // largest size it runs at; nil for no limit
	why      string
}

func sumVariants() []sumVariant {
	return []sumVariant{
		{name: "serial loop (seed FindSum)", baseline: true, sum: seeds.FindSum},
		{name: "goroutine + mutex per element (seed FindSumConc)", sum: seeds.FindSumConc,
			limit: func(m Mode) int { return pick(m, 1_000_000, 10_000, 1000) },
			why:   "one goroutine per element: ~1000× the serial time, kept to sizes where a run stays short"},
		{name: "split per CPU (seed FindSumSplit)", sum: func(xs []int) int { return seeds.FindSumSplit(runtime.GOMAXPROCS(0), xs) }},
		{name: "sluice par.Sum", sum: par.Sum[int]},
	}
}

func sumExperiment() *Experiment {
	return &Experiment{
		Name: "sum", Seed: "003", Unit: "element",
		Title: "CPU-bound: summing a slice of ints",
		Cases: func(c *Config) []Case {
			var cases []Case
			for _, n := range c.sizes(pick(c.Mode, []int{100, 10_000, 1_000_000}, []int{100, 10_000, 1_000_000}, []int{100, 1000, 200_000})) {
				for _, v := range sumVariants() {
					cs := Case{Group: "n=" + count(n), Variant: v.name, Baseline: v.baseline, Items: n}
					if v.limit != nil && n > v.limit(c.Mode) {
						cs.Skip = fmt.Sprintf("above %s elements in %s mode (%s)", count(v.limit(c.Mode)), c.Mode, v.why)
					}
					cs.Setup = func() (*Instance, error) {
						xs := sumInput(n)
						want := 0
						for _, x := range xs {
							want += x
						}
						return &Instance{Round: func(Metrics) error {
							if got := v.sum(xs); got != want {
								return fmt.Errorf("sum of %d elements = %d, want %d", n, got, want)
							}
							return nil
						}}, nil
					}
					cases = append(cases, cs)
				}
			}
			return cases
		},
	}
}

// sumInput is the seed's list: n ints in [0, 1e6), the same every run.
func sumInput(n int) []int {
	rng := rand.New(rand.NewPCG(3, 3))
	xs := make([]int, n)
	for i := range xs {
		xs[i] = rng.IntN(1_000_000)
	}
	return xs
}
