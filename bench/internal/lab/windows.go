package lab

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/bench/internal/windows"
)

// The windows experiment (issue 38's target): per symbol, one-second
// tumbling VWAP windows by event time over synthetic trades (500 symbols,
// up to 100 ms of disorder), decoded from JSON lines, each variant a whole
// program (bench/windows) in its own process so that its peak memory is
// its own: a hand-written one-goroutine loop (the baseline), goroutines +
// channels + a mutex-guarded map, and sluice. The cheap-items groups make
// the trades in memory instead of reading and decoding them. Every
// program's answer — its windows' digest, their trades and no trade late —
// is checked against the plain loop run here over the generator.

type windowsVariant struct {
	name, prog string
	baseline   bool
	note       string
	cheapNote  string // the note of its cheap-items row
}

func windowsVariants() []windowsVariant {
	return []windowsVariant{
		{name: "loop (one goroutine)", prog: "loop", baseline: true, note: "read a line, json.Unmarshal, fold into a map of accumulators",
			cheapNote: "make a trade, fold it into a map of accumulators"},
		{name: "goroutines + channels + mutex", prog: "chans", note: "a reader sends each line on a channel; GOMAXPROCS workers decode and fold under one mutex",
			cheapNote: "a generator sends each trade on a channel; GOMAXPROCS workers fold under one mutex"},
		{name: "sluice", prog: "sluice", note: "read 16 KiB blocks → FlatMap decode (2) → Window(Tumbling(1s), keyed by symbol) → ForEach",
			cheapNote: "From (make the trades) → Window(Tumbling(1s), keyed by symbol) → ForEach"},
	}
}

func windowsExperiment() *Experiment {
	return &Experiment{
		Name: "windows", Seed: "004", Unit: "trade", Runs: 3,
		Title: "per-symbol one-second tumbling VWAP by event time over JSON-line trades, each variant its own process",
		Columns: []Column{
			{Key: "cpu_s", Header: "CPU s", Format: "%.2f"},
			{Key: "max_rss_mb", Header: "max RSS MB", Format: "%.1f"},
			{Key: "rss_vs_loop", Header: "RSS/loop", Format: "%.2f"},
		},
		Charts: []Column{{Key: "max_rss_mb", Header: "max RSS MB", Format: "%.1f"}},
		Cases: func(c *Config) []Case {
			var cases []Case
			for _, n := range c.sizes(pick(c.Mode, []int{1_000_000, 5_000_000}, []int{1_000_000}, []int{20_000})) {
				for _, cheap := range []bool{false, true} {
					group := "JSON lines, n=" + count(n)
					if cheap {
						group = "cheap items (no decode), n=" + count(n)
					}
					for _, v := range windowsVariants() {
						note := v.note
						if cheap {
							note = v.cheapNote
						}
						cs := Case{Group: group, Variant: v.name, Baseline: v.baseline, Items: n, Note: note}
						cs.Process = func() (Sample, error) { return windowsProcess(c, v, n, cheap) }
						cases = append(cases, cs)
					}
				}
			}
			return cases
		},
		Finish: func(rows []Row) {
			loop := map[string]float64{}
			for _, r := range rows {
				if r.Baseline && r.Status == statusOK {
					loop[r.Group] = r.Metrics["max_rss_mb"]
				}
			}
			for i := range rows {
				if b := loop[rows[i].Group]; b > 0 && rows[i].Status == statusOK {
					rows[i].Metrics["rss_vs_loop"] = rows[i].Metrics["max_rss_mb"] / b
				}
			}
		},
	}
}

// windowsFixture is what the cases share: the program and the input files
// by size, made once per invocation.
type windowsFixture struct {
	dir, prog string
	files     map[int]string
	want      map[int]windows.Result
	err       error
}

var windowsFix *windowsFixture

func (c *Config) windowsFixture() (*windowsFixture, error) {
	if windowsFix != nil {
		return windowsFix, windowsFix.err
	}
	f := &windowsFixture{files: map[int]string{}, want: map[int]windows.Result{}}
	windowsFix = f
	gobin, err := exec.LookPath("go")
	if err != nil {
		f.err = fmt.Errorf("go not found: %w", errSkip)
		return f, f.err
	}
	if f.dir, err = os.MkdirTemp("", "sluice-windows-"); err != nil {
		f.err = err
		return f, err
	}
	dir := f.dir
	c.atEnd(func() { os.RemoveAll(dir); windowsFix = nil })
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	f.prog = filepath.Join(dir, "windows")
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", f.prog, "github.com/sluicehq/sluice/bench/windows")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		f.err = fmt.Errorf("go build of bench/windows (run from the repository or bench/): %v: %s", err, lastLine(out.String()))
	}
	return f, f.err
}

func (f *windowsFixture) input(n int) (string, windows.Result, error) {
	if p, ok := f.files[n]; ok {
		return p, f.want[n], nil
	}
	p := filepath.Join(f.dir, fmt.Sprintf("trades-%d.jsonl", n))
	if err := windows.WriteFile(p, n); err != nil {
		return "", windows.Result{}, err
	}
	f.files[n], f.want[n] = p, windows.Reference(n)
	return p, f.want[n], nil
}

// windowsProcess runs one variant once, as a child process with
// GOMAXPROCS=2, and checks the answer it prints.
func windowsProcess(c *Config, v windowsVariant, n int, cheap bool) (Sample, error) {
	f, err := c.windowsFixture()
	if err != nil {
		return Sample{}, err
	}
	path, want, err := f.input(n)
	if err != nil {
		return Sample{}, err
	}
	args := []string{"-variant", v.prog, "-in", path}
	if cheap {
		args = []string{"-variant", v.prog, "-cheap", "-n", strconv.Itoa(n)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, f.prog, args...)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return Sample{}, fmt.Errorf("%v: %s", err, lastLine(errOut.String()))
	}
	got, err := windows.ParseResult(out.String())
	if err != nil {
		return Sample{}, err
	}
	if !got.Same(want) {
		return Sample{}, fmt.Errorf("printed %v, want %v", got, want)
	}
	rss, ok := PeakRSS(out.String())
	if !ok {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss * 1024
		}
	}
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	return Sample{Elapsed: wall, Items: n, Metrics: Metrics{"cpu_s": cpu, "max_rss_mb": float64(rss) / 1e6}}, nil
}
