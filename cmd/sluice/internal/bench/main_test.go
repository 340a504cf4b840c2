package bench

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Process cases run this test binary as their child: act as
	// `sluice bench` when asked to.
	if os.Getenv("SLUICE_BENCH_CHILD") == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr, testHost("")))
	}
	goleak.VerifyTestMain(m)
}

// testHost lends the bench the seed 002 helpers the sluice command would,
// in a simple form: the list 0 … k-1 and a direct sum of squares.
func testHost(exe string) Host {
	return Host{
		Exe: exe,
		Numbers: func(k int) []int {
			xs := make([]int, k)
			for i := range xs {
				xs[i] = i % 100
			}
			return xs
		},
		ExpectedSum: func(nums []int, n int) int {
			s := 0
			for i := range n {
				v := nums[i%len(nums)]
				s += v * v
			}
			return s
		},
		CPUModel: func() string { return "test CPU" },
		Squares: map[string]func(n, w int, nums []int) (int, error){
			"naive": func(n, _ int, nums []int) (int, error) {
				s := 0
				for i := range n {
					v := nums[i%len(nums)]
					s += v * v
				}
				return s, nil
			},
		},
	}
}
