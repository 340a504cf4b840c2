package lab

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/bench/internal/machine"
	"github.com/sluicehq/sluice/bench/internal/seed002"
)

// figures are what seed 002 reported for a whole run, from /usr/bin/time.
type figures struct {
	Wall, CPU time.Duration // CPU: user + sys
	MaxRSS    int64         // bytes
}

// runProgram runs one built program of bench/seed002 once and returns its
// figures, checking the Final Sum it prints.
func runProgram(path string, n, w, list, buffer int, timeout time.Duration) (figures, error) {
	cmd := exec.Command(path, "-n", strconv.Itoa(n), "-w", strconv.Itoa(w),
		"-list", strconv.Itoa(list), "-buffer", strconv.Itoa(buffer))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return figures{}, err
	}
	timer := time.AfterFunc(timeout, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	wall := time.Since(start)
	timer.Stop()
	if err != nil {
		return figures{}, fmt.Errorf("%v: %s", err, lastLine(errOut.String()))
	}
	got, err := finalSum(out.String())
	if err != nil {
		return figures{}, err
	}
	if want := seed002.ExpectedSum(seed002.Numbers(list), n); got != want {
		return figures{}, fmt.Errorf("printed Final Sum: %d, want %d", got, want)
	}
	f := figures{Wall: wall, CPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	rss, ok := PeakRSS(out.String())
	if !ok {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss * 1024 // an upper bound: see squares.go
		}
	}
	f.MaxRSS = rss
	return f, nil
}

// stat is the median and range of one figure over the runs.
type stat struct{ med, lo, hi float64 }

func statOf(xs []float64) stat {
	return stat{med: median(xs), lo: slices.Min(xs), hi: slices.Max(xs)}
}

func (s stat) String(format string) string {
	return fmt.Sprintf(format+" ("+format+"–"+format+")", s.med, s.lo, s.hi)
}

// SquaresMain is `go run ./bench/cmd/squares`: seed 002's comparison as the
// seed made it, three whole programs each in its own process — the naive
// one with plain channels (standard library only), sluice's (the core
// only) and the hand-written reference — run count times in turn, reported
// with medians and min–max: runtime, values/s, CPU, CPU s per million
// values, max RSS, and sluice's ratios to the naive program in the same
// run. It returns the exit status: 1 when a program fails or prints a wrong
// sum, 2 for bad usage.
func SquaresMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("squares", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var n, w, count, list, buffer int
	fs.IntVar(&n, "n", 50_000_000, "number of values to generate")
	fs.IntVar(&w, "w", 3, "number of squaring workers")
	fs.IntVar(&count, "count", 5, "runs of each program, interleaved; medians and min–max are reported")
	fs.IntVar(&list, "list", 1024, "length of the pre-generated list of random numbers")
	fs.IntVar(&buffer, "buffer", 1024, "capacity of the naive program's channels")
	timeout := fs.Duration("timeout", 5*time.Minute, "a run that takes longer is FAILED")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if n < 1 || w < 1 || count < 1 || list < 1 || buffer < 0 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "squares: -n, -w, -count and -list must be ≥ 1, -buffer ≥ 0, and no arguments")
		return 2
	}
	dir, err := buildGoPrograms(*timeout)
	if err != nil {
		fmt.Fprintln(stderr, "squares:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	progs := []string{"naive", "sluice", "hand"}
	fmt.Fprintf(stdout, "seed 002 squares: n=%d w=%d, list of %d numbers, naive channels buffered %d; %d interleaved run(s) of each program, medians (min–max)\n",
		n, w, list, buffer, count)
	fmt.Fprintf(stdout, "conditions: %s, %d CPUs, GOMAXPROCS=%d, %s, %s\n", machine.CPUModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0),
		runtime.Version(), time.Now().Format("2006-01-02"))
	runs := map[string][]figures{}
	for range count {
		for _, p := range progs {
			f, err := runProgram(filepath.Join(dir, p), n, w, list, buffer, *timeout)
			if err != nil {
				fmt.Fprintf(stderr, "squares: FAILED: %s: %v\n", p, err)
				return 1
			}
			runs[p] = append(runs[p], f)
		}
	}
	of := func(p string, key func(figures) float64) stat {
		xs := make([]float64, len(runs[p]))
		for i, f := range runs[p] {
			xs[i] = key(f)
		}
		return statOf(xs)
	}
	vps := func(f figures) float64 { return float64(n) / f.Wall.Seconds() }
	cpuM := func(f figures) float64 { return f.CPU.Seconds() / (float64(n) / 1e6) }
	rss := func(f figures) float64 { return float64(f.MaxRSS) / 1e6 }
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "program\truntime (s)\tvalues/s (M)\tCPU (s)\tCPU s / M values\tmax RSS (MB)\t")
	for _, p := range progs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", p,
			of(p, func(f figures) float64 { return f.Wall.Seconds() }).String("%.3f"),
			of(p, func(f figures) float64 { return vps(f) / 1e6 }).String("%.1f"),
			of(p, func(f figures) float64 { return f.CPU.Seconds() }).String("%.2f"),
			of(p, cpuM).String("%.4f"), of(p, rss).String("%.1f"))
	}
	tw.Flush()
	ratio := func(p string, key func(figures) float64) float64 {
		return of(p, key).med / of("naive", key).med
	}
	speed, cpu, mem := ratio("sluice", vps), ratio("sluice", cpuM), ratio("sluice", rss)
	fmt.Fprintf(stdout, "sluice / naive: values/s ×%.1f (target ≥ ×20: %s), CPU per value ×%.3f = 1/%.1f (target ≤ 1/10: %s), max RSS ×%.2f (target ≤ ×1.5: %s)\n",
		speed, met(speed >= 20), cpu, 1/cpu, met(cpu <= 0.1), mem, met(mem <= 1.5))
	fmt.Fprintf(stdout, "hand / naive: values/s ×%.1f, CPU per value 1/%.1f, max RSS ×%.2f; sluice reaches %.0f%% of hand's values/s\n",
		ratio("hand", vps), 1/ratio("hand", cpuM), ratio("hand", rss), 100*of("sluice", vps).med/of("hand", vps).med)
	return 0
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
