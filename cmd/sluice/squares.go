package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/internal/bench"
)

// Seed 002's workload: a generator sends n numbers taken in turn from a list
// of pre-generated random numbers, w workers square them, and one fan-in
// goroutine sums the squares.

// numbers returns the pre-generated list: k values in [0, 100), the same
// for every run (seeded), so that every implementation has the same answer.
func numbers(k int) []int {
	rng := rand.New(rand.NewPCG(2, 2))
	xs := make([]int, k)
	for i := range xs {
		xs[i] = rng.IntN(100)
	}
	return xs
}

// expectedSum is the sum of squares of the first n values of the endlessly
// repeated list nums, computed without a pipeline.
func expectedSum(nums []int, n int) int {
	full, sq := 0, 0
	for _, v := range nums {
		full += v * v
	}
	sq = full * (n / len(nums))
	for _, v := range nums[:n%len(nums)] {
		sq += v * v
	}
	return sq
}

// squaresNaive is the seed's design with plain Go channels: one value per
// channel operation.
func squaresNaive(n, w, buffer int, nums []int) int {
	produce := make(chan int, buffer)
	squares := make(chan int, buffer)
	go func() {
		defer close(produce)
		j := 0
		for range n {
			produce <- nums[j]
			if j++; j == len(nums) {
				j = 0
			}
		}
	}()
	var wg sync.WaitGroup
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := range produce {
				squares <- v * v
			}
		}()
	}
	go func() {
		wg.Wait()
		close(squares)
	}()
	sum := 0
	for v := range squares {
		sum += v
	}
	return sum
}

// handChunk is the slice size of squaresHand, the size the issue's
// reference program uses.
const handChunk = 256

// squaresHand is the reference the issue measures sluice against: the
// same program written by hand for speed, moving values in slices of 256
// that are recycled through a free list, with the squaring and summing
// written inline. It is what a general library's machinery is compared to.
func squaresHand(n, w int, nums []int) int {
	full := make(chan []int, 4*w)
	squared := make(chan []int, 4*w)
	free := make(chan []int, 8*w+2)
	get := func() []int {
		select {
		case s := <-free:
			return s[:0]
		default:
			return make([]int, 0, handChunk)
		}
	}
	go func() {
		defer close(full)
		s, j := get(), 0
		for range n {
			s = append(s, nums[j])
			if j++; j == len(nums) {
				j = 0
			}
			if len(s) == handChunk {
				full <- s
				s = get()
			}
		}
		if len(s) > 0 {
			full <- s
		}
	}()
	var wg sync.WaitGroup
	for range w {
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
	return sum
}

// squaresSluice is the same program written with sluice: the same
// generator loop, w workers, one summing sink.
func squaresSluice(ctx context.Context, n, w int, nums []int, onStart func(*sluice.Pipeline)) (int, error) {
	p := sluice.New(ctx, sluice.Named("squares"))
	src := sluice.From(p, "generate", func(ctx context.Context, out *sluice.Emitter[int]) error {
		j := 0
		for range n {
			if !out.Send(nums[j]) {
				return ctx.Err()
			}
			if j++; j == len(nums) {
				j = 0
			}
		}
		return nil
	})
	sq := sluice.Map(p, "square", src, w, func(_ context.Context, v int) (int, error) { return v * v, nil })
	sum := sluice.Reduce(p, "sum", sq, 0, func(acc, v int) int { return acc + v })
	if onStart != nil {
		onStart(p)
	}
	if err := p.Wait(); err != nil {
		return 0, err
	}
	return sum.Value(), nil
}

type squaresFlags struct {
	n, w, buffer, count, listLen int
	impl                         string
	dash                         string // --dash ADDR: serve the live page while the sluice run lasts
}

func runSquares(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("squares", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f squaresFlags
	fs.IntVar(&f.n, "n", 50_000_000, "number of values to generate")
	fs.IntVar(&f.w, "w", 3, "number of squaring workers")
	fs.StringVar(&f.impl, "impl", "", "run one implementation alone in this process: naive, sluice or hand (the hand-written reference; default: all three, each in its own process)")
	fs.IntVar(&f.buffer, "buffer", 1024, "capacity of the naive version's channels")
	fs.IntVar(&f.count, "count", 1, "runs of each implementation; medians are reported")
	fs.IntVar(&f.listLen, "list", 1024, "length of the pre-generated list of random numbers")
	fs.StringVar(&f.dash, "dash", "", dashHelp)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sluice squares [flags]\n\nSeed 002's fan-out/fan-in program, with plain channels (naive), with sluice, and hand-written\nfor speed (hand: recycled slices of 256, the reference sluice is measured against).\nWithout --impl, each runs in its own process and they are compared.\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "sluice squares: unexpected argument %q\n", fs.Arg(0))
		return 2
	case f.n < 1:
		fmt.Fprintf(stderr, "sluice squares: -n must be ≥ 1, got %d\n", f.n)
		return 2
	case f.w < 1:
		fmt.Fprintf(stderr, "sluice squares: -w must be ≥ 1, got %d\n", f.w)
		return 2
	case f.buffer < 0:
		fmt.Fprintf(stderr, "sluice squares: -buffer must be ≥ 0, got %d\n", f.buffer)
		return 2
	case f.count < 1:
		fmt.Fprintf(stderr, "sluice squares: -count must be ≥ 1, got %d\n", f.count)
		return 2
	case f.listLen < 1:
		fmt.Fprintf(stderr, "sluice squares: -list must be ≥ 1, got %d\n", f.listLen)
		return 2
	case f.dash != "" && (f.impl == "naive" || f.impl == "hand"):
		fmt.Fprintf(stderr, "sluice squares: --dash shows the sluice implementation's pipeline; the %s one has none\n", f.impl)
		return 2
	}
	switch f.impl {
	case "naive", "sluice", "hand":
		return squaresAlone(f, stdout, stderr)
	case "":
		return squaresCompare(f, stdout, stderr)
	}
	fmt.Fprintf(stderr, "sluice squares: -impl must be naive, sluice or hand, got %q\n", f.impl)
	return 2
}

// squaresAlone runs one implementation in this process and prints the
// Final Sum and its figures.
func squaresAlone(f squaresFlags, stdout, stderr io.Writer) int {
	nums := numbers(f.listLen)
	want := expectedSum(nums, f.n)
	onStart, stopDash, ok := dashFor(f.dash, stderr)
	if !ok {
		return 1
	}
	defer stopDash()
	m := startMeasure()
	var got int
	switch f.impl {
	case "naive":
		got = squaresNaive(f.n, f.w, f.buffer, nums)
	case "hand":
		got = squaresHand(f.n, f.w, nums)
	default:
		var err error
		got, err = squaresSluice(context.Background(), f.n, f.w, nums, onStart)
		if err != nil {
			fmt.Fprintln(stderr, "sluice squares:", err)
			return 1
		}
	}
	fig := m.stop(f.n)
	fmt.Fprintf(stdout, "Final Sum: %d\n", got)
	if line := bench.OwnPeakRSS(); line != "" {
		fmt.Fprintln(stdout, line) // for a parent: our rusage may count its memory
	}
	fmt.Fprintf(stdout, "%s: n=%d w=%d  %s\n", f.impl, f.n, f.w, fig)
	if got != want {
		fmt.Fprintf(stderr, "sluice squares: FAILED: %s computed %d, want %d\n", f.impl, got, want)
		return 1
	}
	return 0
}

// squaresCompare runs each implementation in its own process, count times
// in turn, and compares their median figures.
func squaresCompare(f squaresFlags, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "sluice squares: cannot find own executable:", err)
		return 1
	}
	want := expectedSum(numbers(f.listLen), f.n)
	if f.dash != "" {
		line, err := compareDash(f.dash)
		if err != nil {
			fmt.Fprintln(stderr, "sluice squares:", err)
			return 2
		}
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintf(stdout, "seed 002 squares: n=%d w=%d, numbers from a pre-generated list of %d; naive channels buffered %d; %d run(s) each, medians\n",
		f.n, f.w, f.listLen, f.buffer, f.count)
	fmt.Fprintf(stdout, "conditions: %s\n", conditions())
	impls := []string{"naive", "sluice", "hand"}
	runs := map[string][]figures{}
	failed := false
	for range f.count {
		for _, impl := range impls {
			fig, sum, err := runChild(exe, impl, f)
			switch {
			case err != nil:
				fmt.Fprintf(stderr, "sluice squares: FAILED: %s: %v\n", impl, err)
				failed = true
			case sum != want:
				fmt.Fprintf(stderr, "sluice squares: FAILED: %s printed Final Sum: %d, want %d\n", impl, sum, want)
				failed = true
			default:
				runs[impl] = append(runs[impl], fig)
			}
		}
	}
	if failed {
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "impl\truntime (s)\tvalues/s\tCPU (s)\tCPU s / M values\tmax RSS (MB)\tFinal Sum\t")
	med := map[string]figures{}
	for _, impl := range impls {
		m := median(runs[impl])
		med[impl] = m
		fmt.Fprintf(tw, "%s\t%.3f\t%.1fe6\t%.3f\t%.4f\t%.1f\t%d\t\n", impl, m.Wall.Seconds(), m.ValuesPerSec()/1e6,
			m.CPU().Seconds(), m.CPUPerMillion(), float64(m.MaxRSS)/1e6, want)
	}
	tw.Flush()
	nv, sl := med["naive"], med["sluice"]
	speed := sl.ValuesPerSec() / nv.ValuesPerSec()
	cpu := sl.CPUPerMillion() / nv.CPUPerMillion()
	rss := float64(sl.MaxRSS) / float64(nv.MaxRSS)
	fmt.Fprintf(stdout, "sluice vs naive: values/s ×%.1f, CPU s per M values ×%.3f (1/%.1f), max RSS ×%.2f\n", speed, cpu, 1/cpu, rss)
	hd := med["hand"]
	fmt.Fprintf(stdout, "reference, hand-written (recycled slices of %d, no calls per value) vs naive: values/s ×%.1f; sluice reaches %.0f%% of it\n",
		handChunk, hd.ValuesPerSec()/nv.ValuesPerSec(), 100*sl.ValuesPerSec()/hd.ValuesPerSec())
	return 0
}

// runChild runs one implementation as its own process and returns its
// figures and the Final Sum it printed.
func runChild(exe, impl string, f squaresFlags) (figures, int, error) {
	cmd := exec.Command(exe, "squares", "-impl", impl, "-n", strconv.Itoa(f.n), "-w", strconv.Itoa(f.w),
		"-buffer", strconv.Itoa(f.buffer), "-list", strconv.Itoa(f.listLen))
	if impl == "sluice" && f.dash != "" {
		cmd.Args = append(cmd.Args, "-dash", f.dash)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return figures{}, 0, fmt.Errorf("%v: %s", err, strings.TrimSpace(errOut.String()))
	}
	for line := range strings.Lines(out.String()) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Final Sum: "); ok {
			sum, err := strconv.Atoi(v)
			if err != nil {
				return figures{}, 0, fmt.Errorf("bad Final Sum line %q", line)
			}
			fig := fromProcess(f.n, wall, cmd.ProcessState)
			if rss, ok := bench.PeakRSS(out.String()); ok {
				fig.MaxRSS = rss
			}
			return fig, sum, nil
		}
	}
	return figures{}, 0, fmt.Errorf("printed no Final Sum line: %q", out.String())
}
