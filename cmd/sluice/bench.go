package main

import (
	"context"
	"io"
	"os"

	"github.com/sluicehq/sluice/cmd/sluice/internal/bench"
)

// runBench is `sluice bench`: the experiments live in internal/bench; this
// lends them the executable and the workload helpers of `sluice squares`.
func runBench(args []string, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		exe = ""
	}
	return bench.Main(args, stdout, stderr, bench.Host{
		Exe:         exe,
		Numbers:     numbers,
		ExpectedSum: expectedSum,
		CPUModel:    cpuModel,
		Squares: map[string]func(n, w int, nums []int) (int, error){
			"naive": func(n, w int, nums []int) (int, error) { return squaresNaive(n, w, 1024, nums), nil },
			"sluice": func(n, w int, nums []int) (int, error) {
				return squaresSluice(context.Background(), n, w, nums, nil)
			},
			"hand": func(n, w int, nums []int) (int, error) { return squaresHand(n, w, nums), nil },
		},
	})
}
