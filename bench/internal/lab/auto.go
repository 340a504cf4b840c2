package lab

import (
	"context"
	"fmt"
	"html"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/auto"
)

// Seed 003's lesson at run time: how many workers a stage needs depends on
// the work. Each case (auto_cases.go) runs a Map stage with every fixed
// count and with sluice.Auto(1, 256) for a fixed time against the same
// work, in rounds: each round runs the fixed counts in order with Auto in
// their middle, so that Auto is compared with counts measured around the
// same time, and every comparison is made within a round (Auto against
// that round's best fixed count), the rows giving the median over rounds
// and its range.
//
// An item is a call that succeeded (or a hash). Every figure is measured
// from the calls' own completion times and durations: the steady
// throughput and p99 from autoSettle on, and the time from which a row's
// throughput stays at 90 % of the round's best fixed count's (for the best
// fixed count itself too: where it does not hold, the machine did not);
// the workers of the run's last second; the retries per 1000 items (over
// the run, and over its steady part), and against the best fixed count's.
//
// LAB_AUTO_TRACE=1 prints each change of Auto's count with its reason;
// LAB_AUTO_TUNE="Field=value,…" runs Auto under a tuning other than the
// standard one (fields of internal/auto's Tuning), for sweeps;
// LAB_AUTO_CASES=regexp runs only the cases whose names match it.

const autoVariant = "Auto(1, 256)"

func autoExperiment() *Experiment {
	return &Experiment{
		Name: "auto", Seed: "003", Unit: "call",
		Title: "workers chosen by the engine (sluice.Auto) against every fixed count",
		Runs:  autoRounds,
		Columns: []Column{
			{Key: "steady_per_s", Header: "steady calls/s", Format: "%.0f"},
			{Key: "vs_best", Header: "× best fixed", Format: "%.2f"},
			{Key: "vs_best_min", Header: "min", Format: "%.2f"},
			{Key: "p99_ms", Header: "p99 ms", Format: "%.2f"},
			{Key: "p99_vs_best", Header: "p99 × best", Format: "%.2f"},
			{Key: "p99_vs_best_max", Header: "max", Format: "%.2f"},
			{Key: "best_workers", Header: "best fixed", Format: "%.0f"},
			{Key: "best_p99_workers", Header: "p99 of", Format: "%.0f"},
			{Key: "workers", Header: "workers", Format: "%.0f"},
			{Key: "workers_max", Header: "most workers", Format: "%.0f"},
			{Key: "reach_s", Header: "90% at s", Format: "%.2f"},
			{Key: "reach_s_max", Header: "latest", Format: "%.2f"},
			{Key: "max_running", Header: "max goroutines", Format: "%.0f"},
			{Key: "end_workers", Header: "workers, last 1 s", Format: "%.0f"},
			{Key: "retries_per_1k", Header: "retries/1k calls", Format: "%.1f"},
			{Key: "retries_vs_best", Header: "retries × best", Format: "%.2f"},
			{Key: "steady_retries_per_1k", Header: "steady retries/1k", Format: "%.1f"},
		},
		Cases:  autoExperimentCases,
		Finish: autoFinish,
		Draw:   autoDraw,
	}
}

// autoRounds is how many rounds each case runs, unless --count says
// otherwise: the rows give the median of the rounds' figures.
const autoRounds = 3

func autoCounts(m Mode) []int {
	return pick(m, []int{1, 2, 4, 8, 16, 32, 64, 128, 256}, []int{1, 16, 256}, []int{1, 256})
}

// autoRun is how long one run lasts, and autoSettle when the steady part
// of it starts.
func autoRun(m Mode) (run, settle time.Duration) {
	return pick(m, 6*time.Second, 2*time.Second, 300*time.Millisecond), pick(m, 2*time.Second, time.Second, 100*time.Millisecond)
}

func autoExperimentCases(c *Config) []Case {
	var srv *depServer
	server := func() (*depServer, error) {
		if srv == nil {
			if spec := os.Getenv("LAB_AUTO_TUNE"); spec != "" {
				t, err := autoTuning(spec)
				if err != nil {
					return nil, err
				}
				was := auto.Use(t)
				c.atEnd(func() { auto.Use(was) })
			}
			var err error
			if srv, err = newDepServer(); err != nil {
				return nil, err
			}
			c.atEnd(srv.close)
		}
		return srv, nil
	}
	run, settle := autoRun(c.Mode)
	var cases []Case
	only, err := regexp.Compile(os.Getenv("LAB_AUTO_CASES"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "lab: LAB_AUTO_CASES: %v; running no auto case\n", err)
		return nil
	}
	for _, ac := range autoCases() {
		if !only.MatchString(ac.name) {
			continue
		}
		for _, n := range autoOrder(autoCounts(c.Mode)) {
			name := fmt.Sprintf("fixed %d", n)
			if n == 0 {
				name = autoVariant
			}
			if ac.fixedMax > 0 && n > ac.fixedMax {
				continue // fails by design: see autoCase.fixedMax
			}
			round := 0 // the runner runs a group's cases in turn, round by round
			cases = append(cases, Case{
				Group: ac.name, Variant: name, Baseline: n == 1, Note: ac.title,
				Process: func() (Sample, error) {
					s, err := server()
					if err != nil {
						return Sample{}, err
					}
					call, midway := ac.work(s)
					var opts []sluice.StageOption
					if ac.opts != nil {
						opts = ac.opts()
					}
					smp, err := autoOnce(autoRunSpec{n: n, start: max(1, ac.start), call: call, midway: midway, opts: opts, run: run, settle: settle})
					if err == nil {
						smp.Metrics = perRound(smp.Metrics, round)
					}
					round++
					return smp, err
				},
			})
		}
	}
	return cases
}

// autoOrder is the order a round runs the counts in: the fixed counts in
// increasing order with Auto (0) in their middle, so that the counts Auto
// is compared with ran, on average, around the same time as Auto.
func autoOrder(counts []int) []int {
	h := (len(counts) + 1) / 2
	return slices.Concat(counts[:h], []int{0}, counts[h:])
}

// perRound adds to a run's metrics each again under the name of its round
// ("r1/steady_per_s"): the runner keeps the median of each name over the
// runs, and autoFinish compares the rows round by round.
func perRound(m Metrics, round int) Metrics {
	out := Metrics{}
	for k, v := range m {
		if !strings.HasPrefix(k, "win") { // a window's figure means something within its round only
			out[k] = v
		}
		out[fmt.Sprintf("r%d/%s", round, k)] = v
	}
	return out
}

// autoRunSpec is one run of the auto experiment: a Map of n workers
// (Auto(1, 256) from start when n is 0) calling call with opts, for run,
// its steady part from settle, with midway called at half the run.
type autoRunSpec struct {
	n, start    int
	call        func(context.Context, int) error
	midway      func()
	opts        []sluice.StageOption
	run, settle time.Duration
}

// autoDone is a call that succeeded: when it ended, since the run's
// start, and how long it took.
type autoDone struct{ at, took time.Duration }

// autoOnce runs one pipeline for run: a source of ints, the Map, and a
// counting sink.
func autoOnce(r autoRunSpec) (Sample, error) {
	var mu sync.Mutex
	calls := make([]autoDone, 0, 1<<16)
	p := sluice.New(context.Background(), sluice.Named("auto"))
	src := sluice.From(p, "items", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := 0; out.Send(i); i++ {
		}
		return nil
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	f := func(ctx context.Context, v int) (int, error) {
		t0 := time.Now()
		err := r.call(ctx, v)
		t1 := time.Now()
		if err != nil {
			return v, err // retried: a call that failed is not an item done
		}
		mu.Lock()
		calls = append(calls, autoDone{t1.Sub(start), t1.Sub(t0)})
		mu.Unlock()
		return v, nil
	}
	opts, workers := r.opts, r.n
	if r.n == 0 {
		opts, workers = append(opts, sluice.Auto(1, 256)), r.start
	}
	m := sluice.Map(p, "call", src, workers, f, opts...)
	var got atomic.Int64
	sluice.ForEach(p, "count", m, 1, func(context.Context, int) error { got.Add(1); return nil })
	smp := startAutoSampler(p, start, r, r.n == 0 && os.Getenv("LAB_AUTO_TRACE") != "")
	if r.midway != nil {
		time.AfterFunc(r.run/2, r.midway)
	}
	time.AfterFunc(r.run, p.Drain)
	err := p.Wait()
	elapsed := time.Since(start)
	smp.stop()
	runtime.ReadMemStats(&after)
	if err != nil {
		return Sample{}, err
	}
	mu.Lock()
	defer mu.Unlock()
	if int64(len(calls)) != got.Load() {
		return Sample{}, fmt.Errorf("%d calls made, %d items reached the sink", len(calls), got.Load())
	}
	met := autoMetrics(r, calls, elapsed, smp)
	return Sample{Elapsed: elapsed, Items: max(1, len(calls)), Metrics: met, Measured: true,
		Mallocs: after.Mallocs - before.Mallocs, Bytes: after.TotalAlloc - before.TotalAlloc}, nil
}

// autoSampler reads the stage's workers every 50 ms (and, with trace,
// prints each change of Auto's count to stderr): the counts from settle
// on, those of the run's last second, the most goroutines, and at the
// end the retries.
type autoSampler struct {
	counts, end []int
	maxRunning  int
	retries     int64 // at the end
	settled     int64 // at settle
	p           *sluice.Pipeline
	quit, done  chan struct{}
}

func startAutoSampler(p *sluice.Pipeline, start time.Time, r autoRunSpec, trace bool) *autoSampler {
	s := &autoSampler{p: p, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		var changes int64
		for {
			select {
			case <-s.quit:
				return
			case <-t.C:
			}
			st, since := s.call(), time.Since(start)
			if since >= r.settle {
				if s.counts == nil {
					s.settled = st.Retries
				}
				s.counts = append(s.counts, st.Workers)
			}
			if since >= r.run-time.Second && since < r.run {
				s.end = append(s.end, st.Workers)
			}
			s.maxRunning = max(s.maxRunning, st.Running)
			if trace && st.Auto != nil && st.Auto.Changes != changes {
				changes = st.Auto.Changes
				fmt.Fprintf(os.Stderr, "auto %6.2fs %3d workers: %s: %s\n",
					st.Auto.Changed.Sub(start).Seconds(), st.Workers, st.Auto.Reason, st.Auto.Detail)
			}
		}
	}()
	return s
}

// call returns the stats of the stage "call".
func (s *autoSampler) call() sluice.StageStats {
	for _, st := range s.p.Stats().Stages {
		if st.Name == "call" {
			return st
		}
	}
	return sluice.StageStats{}
}

// stop ends the sampler, once the pipeline has ended, and reads the
// retries.
func (s *autoSampler) stop() {
	close(s.quit)
	<-s.done
	s.retries = s.call().Retries
}

// autoMetrics sums up a run from its calls: throughput per 250 ms window,
// and the steady part's figures.
func autoMetrics(r autoRunSpec, calls []autoDone, elapsed time.Duration, smp *autoSampler) Metrics {
	const win = 250 * time.Millisecond
	wins := make([]float64, int(elapsed/win)+1)
	var steady []float64
	for _, c := range calls {
		wins[int(c.at/win)]++
		if c.at >= r.settle && c.at < r.run {
			steady = append(steady, float64(c.took)/1e6)
		}
	}
	met := Metrics{
		"steady_per_s":   float64(len(steady)) / (r.run - r.settle).Seconds(),
		"p99_ms":         quantile(steady, 0.99),
		"max_running":    float64(smp.maxRunning),
		"retries_per_1k": 1000 * float64(smp.retries) / float64(max(1, len(calls))),
		// The steady part's: its retries per 1000 of its calls.
		"steady_retries_per_1k": 1000 * float64(smp.retries-smp.settled) / float64(max(1, len(steady))),
	}
	if r.midway != nil {
		// The dependency changes at run/2: each half's steady throughput,
		// so that Auto's time to 90 % compares each window with the best
		// fixed count of its half.
		var before, after int
		for _, c := range calls {
			switch {
			case c.at >= r.settle && c.at < r.run/2:
				before++
			case c.at >= r.run/2 && c.at < r.run:
				after++
			}
		}
		met["phase0_per_s"] = float64(before) / (r.run/2 - r.settle).Seconds()
		met["phase1_per_s"] = float64(after) / (r.run / 2).Seconds()
		met["midway_s"] = (r.run / 2).Seconds()
	}
	if r.n == 0 {
		met["workers"], met["end_workers"] = float64(medianInt(smp.counts)), float64(medianInt(smp.end))
		if len(smp.counts) > 0 {
			met["workers_max"] = float64(slices.Max(smp.counts))
		}
	} else {
		met["workers"], met["workers_max"], met["end_workers"] = float64(r.n), float64(r.n), float64(r.n)
	}
	for i, w := range wins[:min(len(wins), int(r.run/win))] {
		met[fmt.Sprintf("win%03d", i)] = w / win.Seconds()
	}
	return met
}

func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[min(len(xs)-1, int(math.Ceil(q*float64(len(xs))))-1)]
}

func medianInt(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// autoFinish compares each row with the best fixed count of its case,
// round by round, and keeps the median over rounds with its range. The
// best fixed count is the one with the highest median steady throughput
// over the rounds (the highest of one round would favour whichever count
// the machine's noise lifted most), and the p99 compared with is that of
// the fixed count with the lowest median p99 among those within 5 % of
// the best's throughput (the strictest fair comparison); each round
// compares with those counts' figures of the same round. "90 % at" is
// the time from which the row's throughput, over 500 ms, stays at 90 % of
// the best's — where the dependency changes midway, of the best fixed
// count of each half (no count holds the whole run's best after a drop);
// a row that never holds it gets -1.
func autoFinish(rows []Row) {
	groups := map[string][]int{}
	for i, r := range rows {
		if r.Status == statusOK && r.Metrics != nil {
			groups[r.Group] = append(groups[r.Group], i)
		}
	}
	for _, idx := range groups {
		b := autoBest(rows, idx)
		if b.best < 0 {
			continue
		}
		got := autoByRound(rows, idx, b)
		for _, i := range idx {
			m, g := rows[i].Metrics, got[i]
			if rows[i].Variant == autoVariant {
				m["best_workers"], m["best_p99_workers"] = rows[b.best].Metrics["workers"], rows[b.p99].Metrics["workers"]
			}
			if len(g.vs) > 0 {
				m["vs_best"], m["vs_best_min"], m["vs_best_max"] = median(g.vs), slices.Min(g.vs), slices.Max(g.vs)
			}
			if len(g.p99) > 0 {
				m["p99_vs_best"], m["p99_vs_best_min"], m["p99_vs_best_max"] = median(g.p99), slices.Min(g.p99), slices.Max(g.p99)
			}
			if len(g.reach) > 0 {
				m["reach_s"], m["reach_s_max"] = never(median(g.reach)), never(slices.Max(g.reach))
			}
		}
		autoRetries(rows, idx, b.best)
	}
}

// autoBests are a case's best fixed rows, by their medians over the
// rounds: the best throughput, the lowest p99 within 5 % of it, and the
// best throughput of each half of a run whose dependency changes midway
// (-1: none).
type autoBests struct {
	best, p99 int
	phase     [2]int
}

func autoBest(rows []Row, idx []int) autoBests {
	b := autoBests{best: -1, p99: -1, phase: [2]int{-1, -1}}
	top := func(i, j int, k string) bool { return j < 0 || rows[i].Metrics[k] > rows[j].Metrics[k] }
	for _, i := range idx {
		if rows[i].Variant == autoVariant {
			continue
		}
		if top(i, b.best, "steady_per_s") {
			b.best = i
		}
		for h, k := range []string{"phase0_per_s", "phase1_per_s"} {
			if _, ok := rows[i].Metrics[k]; ok && top(i, b.phase[h], k) {
				b.phase[h] = i
			}
		}
	}
	if b.best < 0 {
		return b
	}
	for _, i := range idx {
		m := rows[i].Metrics
		if rows[i].Variant != autoVariant && m["steady_per_s"] >= 0.95*rows[b.best].Metrics["steady_per_s"] &&
			(b.p99 < 0 || m["p99_ms"] < rows[b.p99].Metrics["p99_ms"]) {
			b.p99 = i
		}
	}
	return b
}

// autoPer is a row's figures against the best, one per round.
type autoPer struct{ vs, p99, reach []float64 }

// autoByRound compares each row with the best rows of the same round.
func autoByRound(rows []Row, idx []int, b autoBests) []autoPer {
	got := make([]autoPer, len(rows))
	for round := 0; ; round++ {
		key := func(k string) string { return fmt.Sprintf("r%d/%s", round, k) }
		at := func(i int, k string) float64 { return rows[i].Metrics[key(k)] }
		if _, ok := rows[b.best].Metrics[key("steady_per_s")]; !ok {
			return got
		}
		bx, bp := at(b.best, "steady_per_s"), at(b.p99, "p99_ms")
		for _, i := range idx {
			m := rows[i].Metrics
			if _, ok := m[key("steady_per_s")]; !ok {
				continue
			}
			if bx > 0 {
				got[i].vs = append(got[i].vs, m[key("steady_per_s")]/bx)
			}
			if bp > 0 {
				got[i].p99 = append(got[i].p99, m[key("p99_ms")]/bp)
			}
			bestAt := func(j int) float64 { // the best fixed count's throughput in window j
				if mid, ok := m[key("midway_s")]; ok && b.phase[1] >= 0 {
					if float64(j)*0.25 >= mid {
						return at(b.phase[1], "phase1_per_s")
					}
					return at(b.phase[0], "phase0_per_s")
				}
				return bx
			}
			reach := autoReach(m, key, bestAt)
			m[key("reach_s")] = never(reach)
			got[i].reach = append(got[i].reach, reach)
		}
	}
}

// autoReach is the time from which a row's throughput, over 500 ms,
// stays at 90 % of the best's (+Inf: never).
func autoReach(m Metrics, key func(string) string, bestAt func(int) float64) float64 {
	var wins []float64
	for j := 0; ; j++ {
		w, ok := m[key(fmt.Sprintf("win%03d", j))]
		if !ok {
			break
		}
		wins = append(wins, w)
	}
	reach := math.Inf(1) // never
	for j := len(wins) - 2; j >= 0; j-- {
		if (wins[j]+wins[j+1])/2 < 0.9*(bestAt(j)+bestAt(j+1))/2 {
			break
		}
		reach = float64(j) * 0.25
	}
	return reach
}

// autoRetries gives each row of a case whose rows retried its retries
// per call against the best fixed count's, round by round (the median
// over rounds): 1 where neither retried, -1 where the best fixed count
// made none and the row some.
func autoRetries(rows []Row, idx []int, best int) {
	any := false
	for _, i := range idx {
		any = any || rows[i].Metrics["retries_per_1k"] > 0
	}
	if !any {
		return
	}
	for _, i := range idx {
		m := rows[i].Metrics
		var rs []float64
		for round := 0; ; round++ {
			key := fmt.Sprintf("r%d/retries_per_1k", round)
			b, ok := rows[best].Metrics[key]
			r, ok2 := m[key]
			if !ok || !ok2 {
				break
			}
			switch {
			case b > 0:
				rs = append(rs, r/b)
			case r == 0:
				rs = append(rs, 1)
			default:
				rs = append(rs, -1)
			}
		}
		if len(rs) > 0 {
			m["retries_vs_best"] = median(rs)
		}
	}
}

// never writes a time to 90 % that never came (+Inf) as -1.
func never(s float64) float64 {
	if math.IsInf(s, 1) {
		return -1
	}
	return s
}

// autoDraw draws, per case, the steady throughput and p99 against the
// fixed worker count (log scale), with Auto marked as a dashed line at its
// figure and a dot at the count it settled on.
func autoDraw(b *strings.Builder, rows []Row) {
	var groups []string
	for _, r := range rows {
		if !slices.Contains(groups, r.Group) {
			groups = append(groups, r.Group)
		}
	}
	b.WriteString(`<div style="display:flex;flex-wrap:wrap;gap:12px">` + "\n")
	for _, g := range groups {
		var fixed []Row
		var auto *Row
		for i, r := range rows {
			if r.Group != g || r.Status != statusOK || r.Metrics == nil {
				continue
			}
			if r.Variant == autoVariant {
				auto = &rows[i]
			} else {
				fixed = append(fixed, r)
			}
		}
		if len(fixed) == 0 {
			continue
		}
		for _, fig := range []struct{ key, label string }{{"steady_per_s", "calls/s"}, {"p99_ms", "p99 ms"}} {
			autoPanel(b, g, fig.key, fig.label, fixed, auto)
		}
	}
	b.WriteString("</div>\n")
}

func autoPanel(b *strings.Builder, group, key, label string, fixed []Row, auto *Row) {
	const w, h, l, r, t, bt = 300, 190, 48, 10, 24, 30
	xs := func(n float64) float64 { return l + (w-l-r)*math.Log2(max(n, 1))/8 }
	top := 0.0
	for _, f := range fixed {
		top = max(top, f.Metrics[key])
	}
	if auto != nil {
		top = max(top, auto.Metrics[key])
	}
	top = max(top*1.1, 1e-9)
	ys := func(v float64) float64 { return t + (h-t-bt)*(1-v/top) }
	fmt.Fprintf(b, `<svg width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="auto %s: %s against workers">`+"\n", w, h, w, h, html.EscapeString(group), label)
	fmt.Fprintf(b, `<text x="%d" y="14">%s: %s</text>`+"\n", l, html.EscapeString(group), label)
	fmt.Fprintf(b, `<line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/><line class="axis" x1="%d" y1="%d" x2="%d" y2="%d"/>`+"\n", l, h-bt, w-r, h-bt, l, t, l, h-bt)
	for k := 0; k <= 8; k += 2 {
		x := xs(float64(int(1) << k))
		fmt.Fprintf(b, `<text class="muted" x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x, h-bt+14, 1<<k)
	}
	fmt.Fprintf(b, `<text class="muted" x="%d" y="%d" text-anchor="middle">workers</text>`+"\n", (l+w)/2, h-2)
	fmt.Fprintf(b, `<text class="muted" x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", l-4, ys(top/1.1)+4, shortNum(top/1.1))
	fmt.Fprintf(b, `<text class="muted" x="%d" y="%.1f" text-anchor="end">0</text>`+"\n", l-4, ys(0)+4)
	var d strings.Builder
	for i, f := range fixed {
		n := f.Metrics["workers"]
		fmt.Fprintf(&d, "%s%.1f,%.1f", map[bool]string{true: "M", false: "L"}[i == 0], xs(n), ys(f.Metrics[key]))
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="#2f6fdf"><title>%d workers: %.3g</title></circle>`+"\n", xs(n), ys(f.Metrics[key]), int(n), f.Metrics[key])
	}
	fmt.Fprintf(b, `<path d="%s" fill="none" stroke="#2f6fdf" stroke-width="1.5"/>`+"\n", d.String())
	if auto != nil {
		v, n := auto.Metrics[key], auto.Metrics["workers"]
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e07b22" stroke-dasharray="4 3"/>`+"\n", l, w-r, ys(v), ys(v))
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="4" fill="#e07b22"><title>%s settled at %d workers: %.3g</title></circle>`+"\n", xs(n), ys(v), autoVariant, int(n), v)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" fill="#e07b22" text-anchor="end">Auto (%d)</text>`+"\n", w-r, ys(v)-4, int(n))
	}
	b.WriteString("</svg>\n")
}

func shortNum(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}
