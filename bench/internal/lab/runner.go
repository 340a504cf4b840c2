package lab

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Run runs the cases of exps and returns every row, in case order. It
// never stops early: a FAILED case is reported and the next one runs.
func Run(cfg *Config, exps []*Experiment) *Result {
	if cfg.Count < 1 || cfg.Mode == Check {
		cfg.Count = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	if cfg.progress == nil {
		cfg.progress = &progress{}
	}
	res := &Result{Conditions: conditionsNow(cfg), Experiments: exps}
	plans := make([][]Case, len(exps))
	total := 0
	for i, e := range exps {
		for _, c := range e.Cases(cfg) {
			if cfg.keep(c.Variant, c.Baseline) {
				plans[i] = append(plans[i], c)
			}
		}
		total += len(plans[i])
	}
	cfg.progress.begin(total)
	defer cfg.progress.end()
	defer func() {
		for _, f := range cfg.cleanups {
			f()
		}
		cfg.cleanups = nil
	}()
	for i, e := range exps {
		count := cfg.Count
		if e.Runs > 0 && !cfg.countSet && cfg.Mode != Check {
			cfg.Count = e.Runs
			res.Conditions.Own = append(res.Conditions.Own, fmt.Sprintf("%s %d", e.Name, e.Runs))
		}
		rows := runExperiment(cfg, e, plans[i], res.Conditions)
		cfg.Count = count
		setSpeedups(rows)
		res.Rows = append(res.Rows, rows...)
	}
	return res
}

func runExperiment(cfg *Config, e *Experiment, cases []Case, cond Conditions) []Row {
	rows := make([]Row, len(cases))
	done := make([]bool, len(cases))
	for i, c := range cases {
		if done[i] {
			continue
		}
		rows[i] = newRow(e, c, cond)
		switch {
		case c.Skip != "":
			rows[i].Status, rows[i].Note = statusSkipped, joinNote(c.Skip, c.Note)
			cfg.progress.caseDone()
		case c.Process != nil:
			// The process cases of a group run in turn, run by run, so
			// that a slow minute of a shared machine falls on all of them.
			var idx []int
			for j := i; j < len(cases); j++ {
				if cases[j].Group == c.Group && cases[j].Process != nil && cases[j].Skip == "" {
					idx = append(idx, j)
				}
			}
			for _, j := range idx {
				rows[j] = newRow(e, cases[j], cond)
				done[j] = true
			}
			runProcesses(cfg, e, cases, idx, rows)
		default:
			samples, items, err := runInProcess(cfg, e, c)
			if items > 0 {
				rows[i].ItemsPerRun = items
			}
			finishRow(&rows[i], samples, err)
			cfg.progress.caseDone()
		}
		done[i] = true
	}
	if e.Derive != nil {
		for i := range rows {
			if rows[i].Status == statusOK {
				e.Derive(&rows[i])
			}
		}
	}
	if e.Finish != nil {
		e.Finish(rows)
	}
	return rows
}

func newRow(e *Experiment, c Case, cond Conditions) Row {
	return Row{
		Experiment: e.Name, Seed: e.Seed, Group: c.Group, Series: c.Series, X: c.X,
		Variant: c.Variant, Baseline: c.Baseline, Status: statusOK, Note: c.Note, Unit: e.Unit,
		ItemsPerRun: c.Items, CPU: cond.CPU, GOMAXPROCS: cond.GOMAXPROCS, GoVersion: cond.GoVersion,
		Date: cond.Date, Mode: cond.Mode.String(),
	}
}

func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// runInProcess sets the case up, runs a warm-up round (which also sizes
// the runs), then cfg.Count measured runs, and closes it, all under the
// watchdog.
func runInProcess(cfg *Config, e *Experiment, c Case) ([]Sample, int, error) {
	var inst *Instance
	if err := guarded(cfg.Timeout, "setup", func() (err error) {
		inst, err = c.Setup()
		return err
	}); err != nil {
		return nil, 0, err
	}
	items := c.Items
	if inst.Items > 0 {
		items = inst.Items
	}
	// After a failed round, Close still releases the case's goroutines
	// (unless the round never returned: then they are stuck anyway).
	closeAfter := func(err error) error {
		if inst.Close != nil && !errors.Is(err, errTimeout) {
			_ = guarded(cfg.Timeout, "close", inst.Close)
		}
		return err
	}
	cfg.progress.show(e.Name, c.Group, c.Variant, 0, cfg.Count)
	m := Metrics{}
	var warm time.Duration
	if err := guarded(cfg.Timeout, "warm-up round", func() error {
		start := time.Now()
		err := inst.Round(m)
		warm = time.Since(start)
		return err
	}); err != nil {
		return nil, 0, closeAfter(err)
	}
	rounds := 1
	if !c.OneRound && cfg.Mode != Check {
		rounds = int(min(float64(cfg.Time)/float64(max(warm, time.Microsecond)), 1<<20))
		rounds = max(rounds, 1)
	}
	samples := make([]Sample, 0, cfg.Count)
	for run := range cfg.Count {
		cfg.progress.show(e.Name, c.Group, c.Variant, run+1, cfg.Count)
		var s Sample
		err := guarded(cfg.Timeout, fmt.Sprintf("run %d", run+1), func() error {
			var err error
			s, err = measureRounds(inst, rounds, items)
			return err
		})
		if err != nil {
			return nil, 0, closeAfter(err)
		}
		samples = append(samples, s)
	}
	if inst.Close != nil {
		if err := guarded(cfg.Timeout, "close", inst.Close); err != nil {
			return nil, 0, err
		}
	}
	return samples, items, nil
}

// measureRounds times rounds rounds and counts their heap allocations.
func measureRounds(inst *Instance, rounds, items int) (Sample, error) {
	var before, after runtime.MemStats
	m := Metrics{}
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	for r := range rounds {
		if err := inst.Round(m); err != nil {
			if rounds > 1 {
				err = fmt.Errorf("round %d: %w", r+1, err)
			}
			return Sample{}, err
		}
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	return Sample{
		Elapsed: elapsed, Items: rounds * items,
		Mallocs: after.Mallocs - before.Mallocs, Bytes: after.TotalAlloc - before.TotalAlloc,
		Measured: true, Metrics: m,
	}, nil
}

// runProcesses runs the process cases idx of one group Count times in
// turn.
func runProcesses(cfg *Config, e *Experiment, cases []Case, idx []int, rows []Row) {
	samples := make([][]Sample, len(cases))
	errs := make([]error, len(cases))
	for run := range cfg.Count {
		for _, j := range idx {
			if errs[j] != nil {
				continue
			}
			c := cases[j]
			cfg.progress.show(e.Name, c.Group, c.Variant, run+1, cfg.Count)
			var s Sample
			errs[j] = guarded(cfg.Timeout+10*time.Second, fmt.Sprintf("run %d", run+1), func() (err error) {
				s, err = c.Process()
				return err
			})
			if errs[j] == nil {
				samples[j] = append(samples[j], s)
			}
		}
	}
	for _, j := range idx {
		finishRow(&rows[j], samples[j], errs[j])
		cfg.progress.caseDone()
	}
}

// errSkip, wrapped, makes a case's row skipped instead of FAILED: the
// case found at run time that it cannot run here.
var errSkip = errors.New("skipped")

func finishRow(r *Row, samples []Sample, err error) {
	if err != nil {
		if errors.Is(err, errSkip) {
			r.Status = statusSkipped
			r.Note = joinNote(strings.TrimSuffix(strings.TrimSuffix(err.Error(), errSkip.Error()), ": "), r.Note)
			return
		}
		r.Status = statusFailed
		r.Note = joinNote(err.Error(), r.Note)
		return
	}
	r.Runs = len(samples)
	ns := make([]float64, len(samples))
	var items, mallocs, bytes float64
	measured := true
	for i, s := range samples {
		ns[i] = float64(s.Elapsed.Nanoseconds()) / float64(s.Items)
		items += float64(s.Items)
		mallocs += float64(s.Mallocs)
		bytes += float64(s.Bytes)
		measured = measured && s.Measured
	}
	r.NsPerItem, r.NsMin, r.NsMax = median(ns), slices.Min(ns), slices.Max(ns)
	if r.NsPerItem > 0 {
		r.ItemsPerSec = 1e9 / r.NsPerItem
	}
	if measured {
		a, b := mallocs/items, bytes/items
		r.Allocs, r.Bytes = &a, &b
	}
	keys := map[string]bool{}
	for _, s := range samples {
		for k := range s.Metrics {
			keys[k] = true
		}
	}
	if len(keys) > 0 {
		r.Metrics = Metrics{}
		for k := range keys {
			var vs []float64
			for _, s := range samples {
				if v, ok := s.Metrics[k]; ok {
					vs = append(vs, v)
				}
			}
			r.Metrics[k] = median(vs)
		}
	}
}

// setSpeedups sets every ok row's speed-up against the ok baseline of its
// group.
func setSpeedups(rows []Row) {
	base := map[string]float64{}
	for _, r := range rows {
		if r.Baseline && r.Status == statusOK && r.NsPerItem > 0 {
			base[r.Group] = r.NsPerItem
		}
	}
	for i := range rows {
		b, ok := base[rows[i].Group]
		if ok && rows[i].Status == statusOK && rows[i].NsPerItem > 0 {
			s := b / rows[i].NsPerItem
			rows[i].Speedup = &s
		}
	}
}

// errTimeout is returned by guarded when f has not returned in time.
var errTimeout = errors.New("timed out")

// guarded runs f on its own goroutine and returns its error, its panic as
// an error, or errTimeout after timeout. After a timeout f's goroutine is
// left blocked where it was: the case is FAILED and the command exits 1.
func guarded(timeout time.Duration, what string, f func() error) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("panic: %v%s", p, panicSite(debug.Stack()))
			}
		}()
		done <- f()
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, errSkip) {
			err = fmt.Errorf("%s: %w", what, err)
		}
		return err
	case <-t.C:
		return fmt.Errorf("%s: %w after %v (something lost or blocked)", what, errTimeout, timeout)
	}
}

// panicSite is " at FILE:LINE" of the frame that panicked, from a stack
// trace taken in the deferred recover, or "".
func panicSite(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") && i+3 < len(lines) {
			site, _, _ := strings.Cut(strings.TrimSpace(lines[i+3]), " +0x")
			return " at " + site
		}
	}
	return ""
}
