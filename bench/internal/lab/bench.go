package lab

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/sluicehq/sluice/bench/internal/machine"
)

// Mode says how large the experiments are.
type Mode int

const (
	// Full is the default: the seeds' sizes, or as close as a few minutes allow.
	Full Mode = iota
	// Quick uses small sizes so that every experiment finishes in about a minute.
	Quick
	// Check uses tiny sizes and one run: it checks every variant's answer
	// and says nothing about speed. Tests use it.
	Check
)

func (m Mode) String() string {
	switch m {
	case Quick:
		return "quick"
	case Check:
		return "check"
	}
	return "full"
}

// pick returns the value for the mode.
func pick[T any](m Mode, full, quick, check T) T {
	switch m {
	case Quick:
		return quick
	case Check:
		return check
	}
	return full
}

// Config is one invocation's settings.
type Config struct {
	Mode  Mode
	Count int           // runs per case; medians are reported
	Time  time.Duration // target duration of one run of an in-process case
	// Sizes, when set, replaces each selected experiment's own sizes (the
	// meaning of a size is the experiment's: sources, values, bytes, …).
	Sizes []int
	// Variants, when set, keeps only the variants whose names match (the
	// baselines always run: ratios need them).
	Variants *regexp.Regexp
	// RustDir is the cargo project of the Rust reference programs; empty
	// means look for bench/rust above the working directory and the
	// executable.
	RustDir string
	// countSet says Count was given (--count), not defaulted.
	countSet bool
	// Timeout bounds one run of one case (and a Rust build).
	Timeout time.Duration

	progress *progress
	rust     *rustBuild
	progs    *goBuild
	cleanups []func()
}

// atEnd registers f to run once every experiment of the invocation has
// finished (fixtures shared by the cases of an experiment).
func (c *Config) atEnd(f func()) { c.cleanups = append(c.cleanups, f) }

func (c *Config) sizes(own []int) []int {
	if len(c.Sizes) > 0 {
		return c.Sizes
	}
	return own
}

func (c *Config) keep(variant string, baseline bool) bool {
	return baseline || c.Variants == nil || c.Variants.MatchString(variant)
}

// Column is an extra figure an experiment reports, read from each row's
// Metrics under Key.
type Column struct {
	Key, Header, Format string
}

// Experiment is one seed's experiment.
type Experiment struct {
	Name    string
	Seed    string // the seed file's number, "000" … "004"
	Title   string
	Unit    string // what one item is: "message", "value", …
	Columns []Column
	// Lines, when set, draws the experiment as one line per variant over
	// the cases' X (per Series), instead of bars.
	Lines  bool
	XLabel string
	Cases  func(c *Config) []Case
	// Derive, when set, adds figures to a finished ok row.
	Derive func(r *Row)
	// Charts are extra bar charts of the HTML report, one per column
	// (figures where lower is better).
	Charts []Column
	// Runs, when set, is the runs per case unless --count says otherwise
	// (experiments whose one run is already long).
	Runs int
	// Finish, when set, adds figures that compare the rows of a finished
	// experiment with each other.
	Finish func(rows []Row)
	// Draw, when set, adds the experiment's own SVG charts to the HTML
	// report, after the standard ones.
	Draw func(b *strings.Builder, rows []Row)
}

// Case is one variant doing one amount of work.
type Case struct {
	Group    string  // cases of one group compare with the group's baseline
	Series   string  // for line charts: which chart the case belongs to
	X        float64 // for line charts: the position on the x axis
	Variant  string
	Baseline bool
	Items    int    // items per round
	Skip     string // non-empty: not run, and this says why
	Note     string // shown with the row
	// OneRound makes every run exactly one round (cases whose round is
	// already long, or whose metrics describe one round).
	OneRound bool
	// Setup prepares an in-process case; nil for process cases.
	Setup func() (*Instance, error)
	// Process runs one whole run as a child process.
	Process func() (Sample, error)
}

// Instance is a set-up in-process case.
type Instance struct {
	// Round does the case's work once and checks the answer. It may add
	// figures to m (the last round's figures are kept).
	Round func(m Metrics) error
	// Close releases what Setup made and checks that nothing was left
	// over; it may be nil.
	Close func() error
	// Items, when set, replaces Case.Items (for cases that learn their
	// size in Setup).
	Items int
}

// Metrics are extra figures of one run, by Column key.
type Metrics map[string]float64

// Sample is one run's measurement.
type Sample struct {
	Elapsed time.Duration
	Items   int
	// Mallocs and Bytes are the heap allocations of the run, valid when
	// Measured is set (in-process runs).
	Mallocs, Bytes uint64
	Measured       bool
	Metrics        Metrics
}

// Row is one line of every report: one case's result. Field names in JSON
// are stable; Metrics holds the experiment's Column keys and the raw
// figures they derive from (user_s and sys_s for processes, bytes for csv).
type Row struct {
	Experiment  string   `json:"experiment"`
	Seed        string   `json:"seed"`
	Group       string   `json:"group"`
	Series      string   `json:"series,omitempty"`
	X           float64  `json:"x,omitempty"`
	Variant     string   `json:"variant"`
	Baseline    bool     `json:"baseline"`
	Status      string   `json:"status"` // "ok", "FAILED" or "skipped"
	Note        string   `json:"note,omitempty"`
	Unit        string   `json:"unit"`
	ItemsPerRun int      `json:"items_per_run"`
	Runs        int      `json:"runs"`
	NsPerItem   float64  `json:"ns_per_item"`
	NsMin       float64  `json:"ns_per_item_min"`
	NsMax       float64  `json:"ns_per_item_max"`
	ItemsPerSec float64  `json:"items_per_sec"`
	Allocs      *float64 `json:"allocs_per_item"`
	Bytes       *float64 `json:"bytes_per_item"`
	// Speedup is the baseline's median ns/item over this row's: 2 means
	// twice as fast as the baseline.
	Speedup    *float64 `json:"speedup"`
	Metrics    Metrics  `json:"metrics,omitempty"`
	CPU        string   `json:"cpu"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	GoVersion  string   `json:"go_version"`
	Date       string   `json:"date"`
	Mode       string   `json:"mode"`
}

func (r Row) failed() bool { return r.Status == statusFailed }

const (
	statusOK      = "ok"
	statusFailed  = "FAILED"
	statusSkipped = "skipped"
)

// Conditions are recorded with every report.
type Conditions struct {
	CPU        string
	NumCPU     int
	GOMAXPROCS int
	GoVersion  string
	OS, Arch   string
	Date       string
	Mode       Mode
	Count      int
	// Own lists the experiments that ran their own count of runs per
	// case (Experiment.Runs), as "auto 3".
	Own []string `json:",omitempty"`
}

func conditionsNow(c *Config) Conditions {
	return Conditions{
		CPU: machine.CPUModel(), NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		Date: time.Now().Format("2006-01-02"), Mode: c.Mode, Count: c.Count,
	}
}

func (c Conditions) String() string {
	s := fmt.Sprintf("%s, %d CPUs, GOMAXPROCS=%d, %s %s/%s, %s; mode %s, %d run(s) per case",
		c.CPU, c.NumCPU, c.GOMAXPROCS, c.GoVersion, c.OS, c.Arch, c.Date, c.Mode, c.Count)
	if len(c.Own) > 0 {
		s += " (" + strings.Join(c.Own, ", ") + ")"
	}
	return s
}

// Experiments returns every experiment, in the order the lab runs
// them.
func Experiments() []*Experiment {
	return []*Experiment{faninExperiment(), elasticExperiment(), squaresExperiment(), sumExperiment(),
		csvExperiment(), pipelineExperiment(), ringExperiment(), autoExperiment(), windowsExperiment()}
}

// Result is what one invocation measured.
type Result struct {
	Conditions  Conditions
	Experiments []*Experiment
	Rows        []Row
}

// Failed reports whether any row FAILED.
func (r *Result) Failed() bool {
	for _, row := range r.Rows {
		if row.failed() {
			return true
		}
	}
	return false
}

func (r *Result) rowsOf(name string) []Row {
	var rows []Row
	for _, row := range r.Rows {
		if row.Experiment == name {
			rows = append(rows, row)
		}
	}
	return rows
}
