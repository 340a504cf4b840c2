package lab

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/bench/internal/cli"
)

// Program is the lab's command line: the experiments (Main) by default,
// and the commands beside them.
var Program = cli.Program{
	Name:    "lab",
	Default: &cli.Command{Summary: "run the experiments named (every one by default), check their answers and report", Run: Main},
	Commands: []cli.Command{
		{Name: "list", Summary: "list the experiments named (every one by default) and their variants; run nothing", Run: func(args []string, stdout, stderr io.Writer) int {
			return Main(append([]string{"--list-variants"}, args...), stdout, stderr)
		}},
	},
}

// Main is the lab command, `go run ./bench/cmd/lab [flags] [NAME…]`. It returns the exit status: 0,
// 1 when any row FAILED (or a report could not be written), 2 for bad
// usage.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		quick, check, listVariants bool
		runs                       int
		sizes, variants, format    string
		htmlPath, rustDir          string
		runTime, timeout           time.Duration
	)
	fs.BoolVar(&quick, "quick", false, "small sizes: every experiment in about a minute")
	fs.BoolVar(&check, "check", false, "tiny sizes, one run: check every variant's answer, measure nothing")
	fs.IntVar(&runs, "count", 0, "runs per case; medians are reported (default 5, 3 with --quick)")
	fs.StringVar(&sizes, "sizes", "", "comma-separated sizes replacing each selected experiment's own (sources, values, bytes…; k and M suffixes)")
	fs.StringVar(&variants, "variants", "", "run only the variants whose names match this regular expression (case-insensitive; baselines always run)")
	fs.StringVar(&format, "format", "text", "output: text, json (one object per row per line) or markdown")
	fs.StringVar(&htmlPath, "html", "", "also write a self-contained HTML report with charts to this file")
	fs.StringVar(&rustDir, "rust", "", "the cargo project of the Rust programs (default: bench/rust above the working directory or the executable)")
	fs.DurationVar(&runTime, "time", 0, "target duration of one run of an in-process case (default 200ms, 50ms with --quick)")
	fs.DurationVar(&timeout, "timeout", 2*time.Minute, "a run that takes longer is FAILED (lost values block forever)")
	fs.BoolVar(&listVariants, "list-variants", false, "list the experiments and their variants, run nothing (as `lab list`)")
	names, code, ok := cli.Parse(fs, labHelp(), true, args, stdout, stderr)
	if !ok {
		return code
	}

	cfg := &Config{Mode: Full, Count: runs, Time: runTime, Timeout: timeout, RustDir: rustDir, countSet: runs != 0}
	switch {
	case check:
		cfg.Mode = Check
	case quick:
		cfg.Mode = Quick
	}
	if cfg.Count == 0 {
		cfg.Count = pick(cfg.Mode, 5, 3, 1)
	}
	if cfg.Time == 0 {
		cfg.Time = pick(cfg.Mode, 200*time.Millisecond, 50*time.Millisecond, 0)
	}
	if cfg.Count < 1 {
		fmt.Fprintf(stderr, "lab: --count must be ≥ 1, got %d\n", cfg.Count)
		return 2
	}
	if timeout <= 0 {
		fmt.Fprintf(stderr, "lab: --timeout must be > 0, got %v\n", timeout)
		return 2
	}
	if sizes != "" {
		var err error
		if cfg.Sizes, err = parseSizes(sizes); err != nil {
			fmt.Fprintln(stderr, "lab: --sizes:", err)
			return 2
		}
	}
	if variants != "" {
		re, err := regexp.Compile("(?i)" + variants)
		if err != nil {
			fmt.Fprintln(stderr, "lab: --variants:", err)
			return 2
		}
		cfg.Variants = re
	}
	write, ok := writers[format]
	if !ok {
		fmt.Fprintf(stderr, "lab: --format must be text, json or markdown, got %q\n", format)
		return 2
	}
	exps, err := selectExperiments(names)
	if err != nil {
		fmt.Fprintln(stderr, "lab:", err)
		return 2
	}
	if listVariants {
		listAll(stdout, cfg, exps)
		return 0
	}

	cfg.progress = newProgress(stderr)
	res := Run(cfg, exps)
	status := 0
	if err := write(stdout, res); err != nil {
		fmt.Fprintln(stderr, "lab: writing the report:", err)
		status = 1
	}
	if htmlPath != "" {
		if err := writeHTMLFile(htmlPath, res); err != nil {
			fmt.Fprintln(stderr, "lab:", err)
			status = 1
		} else {
			fmt.Fprintf(stderr, "lab: wrote %s\n", htmlPath)
		}
	}
	if res.Failed() {
		for _, r := range res.Rows {
			if r.failed() {
				fmt.Fprintf(stderr, "lab: FAILED: %s / %s / %s: %s\n", r.Experiment, r.Group, r.Variant, r.Note)
			}
		}
		status = 1
	}
	return status
}

var writers = map[string]func(io.Writer, *Result) error{
	"text": WriteText, "json": WriteJSON, "markdown": WriteMarkdown, "md": WriteMarkdown,
}

func writeHTMLFile(path string, res *Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteHTML(f, res); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// experiments is what Main chooses from; tests replace it.
var experiments = Experiments

func selectExperiments(names []string) ([]*Experiment, error) {
	all := experiments()
	if len(names) == 0 {
		return all, nil
	}
	var out []*Experiment
	for _, n := range names {
		i := slices.IndexFunc(all, func(e *Experiment) bool { return e.Name == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown experiment %q (have %s)", n, strings.Join(experimentNames(), ", "))
		}
		if !slices.Contains(out, all[i]) {
			out = append(out, all[i])
		}
	}
	return out, nil
}

func experimentNames() []string {
	var names []string
	for _, e := range experiments() {
		names = append(names, e.Name)
	}
	return names
}

// parseSizes reads "100,10k,1M".
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		mult := 1.0
		switch {
		case strings.HasSuffix(f, "k") || strings.HasSuffix(f, "K"):
			mult, f = 1e3, f[:len(f)-1]
		case strings.HasSuffix(f, "M"):
			mult, f = 1e6, f[:len(f)-1]
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v*mult < 1 || v*mult > 1e10 {
			return nil, fmt.Errorf("bad size %q (want a whole number ≥ 1, like 100, 10k or 1M)", f)
		}
		out = append(out, int(v*mult))
	}
	return out, nil
}

func listAll(w io.Writer, cfg *Config, exps []*Experiment) {
	for _, e := range exps {
		fmt.Fprintf(w, "%s (seed %s): %s\n", e.Name, e.Seed, e.Title)
		var seen []string
		for _, c := range e.Cases(cfg) {
			if slices.Contains(seen, c.Variant) || !cfg.keep(c.Variant, c.Baseline) {
				continue
			}
			seen = append(seen, c.Variant)
			mark := ""
			if c.Baseline {
				mark = "  (baseline)"
			}
			fmt.Fprintf(w, "  %s%s\n", c.Variant, mark)
		}
	}
	for _, f := range cfg.cleanups {
		f()
	}
}

// labHelp heads `lab -h`; the flags follow it.
func labHelp() string {
	var b strings.Builder
	b.WriteString(`usage: go run ./bench/cmd/lab [flags] [NAME…]

Runs the seeds' experiments side by side with sluice, peer libraries and
Rust, checks every variant's answer and reports medians, per-item costs and
speed-ups against each group's baseline. A wrong answer is shown as FAILED
and makes the command exit 1. Experiments (all by default):

`)
	for _, e := range experiments() {
		fmt.Fprintf(&b, "  %-9s seed %s: %s\n", e.Name, e.Seed, e.Title)
	}
	return b.String()
}
