package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/bench/internal/seed002"
)

// Seed 002: generator → w workers squaring → one summing fan-in, each
// variant a whole program in its own process, measured as the seed
// measured it: runtime, values/s, CPU time, CPU s per million values, max
// RSS. Go variants are the minimal programs of bench/seed002, built once
// per invocation with go build (each links its own implementation and the
// standard library, nothing else); Rust variants are the programs in
// bench/rust.
//
// Max RSS is the child's own VmHWM, which it prints: the rusage of a child
// that Go started would also count this process's memory, because
// vfork+exec hands the parent's high-water mark on to the child.

const (
	squaresWorkers = 3    // the seed's -w 3
	squaresList    = 1024 // the programs' default -list
)

type squaresVariant struct {
	name     string
	baseline bool
	note     string
	prog     string // a Go program: bench/seed002/NAME
	rustBin  string // a binary of bench/rust
}

func squaresVariants() []squaresVariant {
	return []squaresVariant{
		{name: "Go channels (seed, naive)", baseline: true, prog: "naive",
			note: "bench/seed002/naive: channels buffered 1024, one value per operation"},
		{name: "sluice", prog: "sluice", note: "bench/seed002/sluice: the core alone"},
		{name: "Go by hand, recycled slices of 256", prog: "hand",
			note: "bench/seed002/hand: the reference for sluice's machinery, no calls per value"},
		{name: "rill (Generate → Map → ForEach)", prog: "rill"},
		{name: "conc stream (task per value)", prog: "conc",
			note: "conc has no channel stages: a stream task per value, callbacks sum in order"},
		{name: "Rust crossbeam-channel (naive)", rustBin: "squares-crossbeam", note: "bounded(1024), one value per operation"},
		{name: "Rust std mpsc (naive)", rustBin: "squares-mpsc", note: "sync_channel(1024); workers share the receiver behind a mutex"},
		{name: "Rust crossbeam, chunks of 256", rustBin: "squares-chunked", note: "vectors of 256 values, recycled"},
	}
}

func squaresExperiment() *Experiment {
	return &Experiment{
		Name: "squares", Seed: "002", Unit: "value",
		Title: fmt.Sprintf("fan-out/fan-in programs: generator → %d workers squaring → summing fan-in, each its own process", squaresWorkers),
		Columns: []Column{
			{Key: "cpu_s", Header: "CPU s", Format: "%.2f"},
			{Key: "cpu_s_per_M", Header: "CPU s/M values", Format: "%.4f"},
			{Key: "max_rss_mb", Header: "max RSS MB", Format: "%.1f"},
		},
		Charts: []Column{
			{Key: "cpu_s_per_M", Header: "CPU s/M values", Format: "%.4f"},
			{Key: "max_rss_mb", Header: "max RSS MB", Format: "%.1f"},
		},
		Cases: func(c *Config) []Case {
			var cases []Case
			for _, n := range c.sizes(pick(c.Mode, []int{5_000_000}, []int{1_000_000}, []int{20_000})) {
				for _, v := range squaresVariants() {
					cs := Case{
						Group: fmt.Sprintf("n=%s, w=%d", count(n), squaresWorkers), Variant: v.name,
						Baseline: v.baseline, Items: n, Note: v.note,
					}
					cs.Process = func() (Sample, error) { return squaresProcess(c, v, n) }
					cases = append(cases, cs)
				}
			}
			return cases
		},
	}
}

// squaresProcess runs one variant once, as a child process, and checks the
// Final Sum it prints.
func squaresProcess(c *Config, v squaresVariant, n int) (Sample, error) {
	nums := seed002.Numbers(squaresList)
	want := seed002.ExpectedSum(nums, n)
	tail := []string{"-n", strconv.Itoa(n), "-w", strconv.Itoa(squaresWorkers)}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	var cmd *exec.Cmd
	if v.rustBin != "" {
		dir, err := c.rustBinaries()
		if err != nil {
			return Sample{}, err
		}
		cmd = exec.CommandContext(ctx, dir+"/"+v.rustBin, tail...)
		cmd.Stdin = strings.NewReader(listText(nums))
	} else {
		dir, err := c.goPrograms()
		if err != nil {
			return Sample{}, err
		}
		cmd = exec.CommandContext(ctx, filepath.Join(dir, v.prog), append(tail, "-list", strconv.Itoa(squaresList))...)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return Sample{}, fmt.Errorf("%v: %s", err, lastLine(errOut.String()))
	}
	got, err := finalSum(out.String())
	if err != nil {
		return Sample{}, err
	}
	if got != want {
		return Sample{}, fmt.Errorf("printed Final Sum: %d, want %d", got, want)
	}
	user, sys := cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime()
	rss, ok := PeakRSS(out.String())
	if !ok {
		// No VmHWM (not Linux): rusage, an upper bound (see above).
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss * 1024 // Linux reports KiB
		}
	}
	cpu := (user + sys).Seconds()
	return Sample{Elapsed: wall, Items: n, Metrics: Metrics{
		"cpu_s": cpu, "cpu_s_per_M": cpu / (float64(n) / 1e6), "max_rss_mb": float64(rss) / 1e6,
		"user_s": user.Seconds(), "sys_s": sys.Seconds(),
	}}, nil
}

// PeakRSS reads the "VmHWM: N kB" line a child printed, in bytes.
func PeakRSS(out string) (int64, bool) {
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err == nil
		}
	}
	return 0, false
}

func listText(nums []int) string {
	var b strings.Builder
	for _, v := range nums {
		b.WriteString(strconv.Itoa(v))
		b.WriteByte('\n')
	}
	return b.String()
}

func finalSum(out string) (int, error) {
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Final Sum: "); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("printed no Final Sum line: %q", lastLine(out))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

var errNoCargo = errors.New("cargo not found")

// rustBinaries builds the Rust programs once per invocation (cargo build
// --release into bench/rust/target) and returns the directory of the
// binaries. Without cargo, or without bench/rust, the error makes the rows
// skipped; a failed build makes them FAILED.
func (c *Config) rustBinaries() (string, error) {
	if c.rust == nil {
		c.rust = &rustBuild{}
	}
	return c.rust.get(c)
}

type rustBuild struct {
	tried bool
	dir   string
	err   error
}

func (r *rustBuild) get(c *Config) (string, error) {
	if r.tried {
		return r.dir, r.err
	}
	r.tried = true
	r.dir, r.err = buildRust(c.RustDir, c.Timeout)
	return r.dir, r.err
}

func buildRust(dir string, timeout time.Duration) (string, error) {
	cargo, err := exec.LookPath("cargo")
	if err != nil {
		return "", fmt.Errorf("%w: %w", errNoCargo, errSkip)
	}
	if dir == "" {
		if dir = findRustDir(); dir == "" {
			return "", fmt.Errorf("bench/rust not found above the working directory or the executable (use --rust DIR): %w", errSkip)
		}
	}
	if _, err := os.Stat(dir + "/Cargo.toml"); err != nil {
		return "", fmt.Errorf("no Cargo.toml in %s", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	target := dir + "/target"
	cmd := exec.CommandContext(ctx, cargo, "build", "--release", "--quiet", "--manifest-path", dir+"/Cargo.toml", "--target-dir", target)
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errOut, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("cargo build --release in %s: %v: %s", dir, err, lastLine(errOut.String()))
	}
	return target + "/release", nil
}

// findRustDir looks for bench/rust/Cargo.toml in the working directory,
// the executable's directory, and their parents.
func findRustDir() string {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, exe[:max(strings.LastIndexByte(exe, '/'), 0)])
	}
	for _, d := range starts {
		for d != "" && d != "/" && d != "." {
			p := d + "/bench/rust"
			if _, err := os.Stat(p + "/Cargo.toml"); err == nil {
				return p
			}
			next := d[:max(strings.LastIndexByte(d, '/'), 0)]
			if next == d {
				break
			}
			d = next
		}
	}
	return ""
}
