// Package seed002 is what every Go program of seed 002's comparison shares:
// its flags, the pre-generated numbers, the expected answer and the lines
// it prints. It imports the standard library only, so that each program
// (bench/seed002/…) links nothing but its own implementation and this.
package seed002

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
)

// Args are a program's flags, as the seed's: -n values, -w workers, and
// the length of the pre-generated list.
type Args struct {
	N, W, List int
	Buffer     int // capacity of the naive program's channels
}

// Parse reads the flags every program takes and exits with status 2 on a
// bad one.
func Parse(name string) Args {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	var a Args
	fs.IntVar(&a.N, "n", 50_000_000, "number of values to generate")
	fs.IntVar(&a.W, "w", 3, "number of squaring workers")
	fs.IntVar(&a.List, "list", 1024, "length of the pre-generated list of random numbers")
	fs.IntVar(&a.Buffer, "buffer", 1024, "capacity of the naive program's channels")
	_ = fs.Parse(os.Args[1:])
	if a.N < 1 || a.W < 1 || a.List < 1 || a.Buffer < 0 || fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "%s: -n, -w and -list must be ≥ 1, -buffer ≥ 0, no arguments\n", name)
		os.Exit(2)
	}
	return a
}

// Numbers returns the pre-generated list: k values in [0, 100), the same
// for every run and every program (seeded), so that all have one answer.
func Numbers(k int) []int {
	rng := rand.New(rand.NewPCG(2, 2))
	xs := make([]int, k)
	for i := range xs {
		xs[i] = rng.IntN(100)
	}
	return xs
}

// ExpectedSum is the sum of squares of the first n values of the endlessly
// repeated list nums, computed without a pipeline.
func ExpectedSum(nums []int, n int) int {
	full := 0
	for _, v := range nums {
		full += v * v
	}
	sum := full * (n / len(nums))
	for _, v := range nums[:n%len(nums)] {
		sum += v * v
	}
	return sum
}

// Report prints the seed's "Final Sum: N" line and this process's peak
// resident set (the VmHWM line of /proc/self/status, where there is one):
// a parent reads the figure back from it because the rusage of a child that
// Go started counts the parent's memory too (vfork+exec hands the parent's
// high-water mark on). It exits 1 if sum is not the expected answer.
func Report(a Args, nums []int, sum int) {
	fmt.Printf("Final Sum: %d\n", sum)
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.Lines(string(b)) {
			if strings.HasPrefix(line, "VmHWM:") {
				fmt.Print(line)
			}
		}
	}
	if want := ExpectedSum(nums, a.N); sum != want {
		fmt.Fprintf(os.Stderr, "FAILED: computed %d, want %d\n", sum, want)
		os.Exit(1)
	}
}
