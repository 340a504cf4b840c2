package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// The sweep of the Kafka demo (`loadtest kafka … --sweep FROM:TO:STEP`):
// one sustained window (the sustained mode, topics and table reset) at
// FROM events/s, then FROM+STEP, … up to TO. A step passes when its window
// HELD (see heldVerdict) and its p99, consume → committed in ClickHouse,
// is at most sweepP99. The sweep stops at the first step that does not
// pass (the rates above it are not tried), prints a table, the highest
// passing rate, and with --report writes an HTML page with the chart.
// With --compare the bare loop (sweep_compare.go) runs the same steps.

// sweepP99 is the most a passing step's p99 (consume → ClickHouse) may be:
// the published p99 of 120 ms.
const sweepP99 = 120 * time.Millisecond

// maxSweepSteps bounds the number of steps a sweep may ask for.
const maxSweepSteps = 100

// sweepRange is --sweep's FROM:TO:STEP.
type sweepRange struct{ from, to, step int }

func (r sweepRange) rates() []int {
	var out []int
	for v := r.from; v <= r.to; v += r.step {
		out = append(out, v)
	}
	return out
}

// parseSweep parses FROM:TO:STEP (events/s, integers) and checks it: 1 ≤
// FROM ≤ TO ≤ maxRate, STEP ≥ 1, at most maxSweepSteps steps.
func parseSweep(s string) (sweepRange, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return sweepRange{}, fmt.Errorf("--sweep must be FROM:TO:STEP (events/s), got %q", s)
	}
	var v [3]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil {
			return sweepRange{}, fmt.Errorf("--sweep must be FROM:TO:STEP, three integers (events/s), got %q", s)
		}
		v[i] = n
	}
	r := sweepRange{v[0], v[1], v[2]}
	switch {
	case r.from < 1 || r.to > maxRate:
		return r, fmt.Errorf("--sweep: the rates must be in [1, %d] events/s, got %q", maxRate, s)
	case r.from > r.to:
		return r, fmt.Errorf("--sweep: FROM (%d) is above TO (%d): the range is upside down", r.from, r.to)
	case r.step < 1:
		return r, fmt.Errorf("--sweep: STEP must be ≥ 1 events/s, got %d", r.step)
	case (r.to-r.from)/r.step+1 > maxSweepSteps:
		return r, fmt.Errorf("--sweep: %q asks for %d steps, more than %d", s, (r.to-r.from)/r.step+1, maxSweepSteps)
	}
	return r, nil
}

// checkSweep returns what is wrong with the sweep's flags, or "". set
// tells which flags were given on the command line.
func checkSweep(f kafkaFlags, set map[string]bool) string {
	if f.sweep == "" {
		if f.report != "" {
			return "--report goes with --sweep"
		}
		return ""
	}
	switch {
	case f.kafka == "":
		return "--sweep runs on Kafka and ClickHouse: it needs --kafka and --clickhouse"
	case set["rate"]:
		return "--sweep sets the rate of each step: it does not go with --rate"
	case f.duration < 2*time.Second || f.duration > maxDuration:
		return fmt.Sprintf("--duration (each step's window) must be at least 2s and at most %s, got %s", maxDuration, f.duration)
	}
	if _, err := parseSweep(f.sweep); err != nil {
		return err.Error()
	}
	return ""
}

// sweepStep is what one step of the sweep measured.
type sweepStep struct {
	rate             int
	window           time.Duration
	in, stored       float64 // events/s over the window
	p50, p90, p99    time.Duration
	max              time.Duration
	lag              int64   // at the end of the window
	cpu              float64 // this process's CPU over the window, µs per event in
	held, pass       bool
	why              string // the verdict's reason, or the error
	err              error
	interruptedEarly bool
}

// stepOf makes a sweepStep of a finished sustained run.
func stepOf(s *sustainedRun) sweepStep {
	st := sweepStep{rate: s.f.rate, window: s.window}
	if s.window <= 0 {
		st.why = "the window did not end (interrupted)"
		st.interruptedEarly = true
		return st
	}
	st.in = float64(s.produced) / s.window.Seconds()
	st.stored = float64(s.storedWin) / s.window.Seconds()
	st.p50, st.p90, st.p99, st.max = s.cons.Q(0.5), s.cons.Q(0.9), s.cons.Q(0.99), s.cons.Max()
	st.cpu = s.cpuPerEvent()
	if n := len(s.samples); n > 0 {
		st.lag = s.samples[n-1].lag
	}
	st.held, st.why = heldVerdict(s.f.rate, s.window, s.produced, s.samples)
	st.pass = passes(st.held, st.p99)
	if st.held && !st.pass {
		st.why = fmt.Sprintf("held, but p99 %s > %s", ms(st.p99), ms(sweepP99))
	}
	return st
}

// passes is the sweep's rule: held, and p99 (consume → ClickHouse) at most
// sweepP99.
func passes(held bool, p99 time.Duration) bool { return held && p99 > 0 && p99 <= sweepP99 }

// sweepKafka runs the sweep: a sustained demo run per step, until a step
// fails, the range ends, or the demo is interrupted.
func sweepKafka(ctx context.Context, in *interrupts, f kafkaFlags, stdout, stderr io.Writer) error {
	r, err := parseSweep(f.sweep)
	if err != nil {
		return err
	}
	drain := in.Draining()
	rates := r.rates()
	fmt.Fprintf(stdout, "sweep: %d steps, %d to %d events/s by %d, a %s window each after a %s warm-up at its rate (counted in no figure); a step passes when it HELD and p99 consume → ClickHouse ≤ %s; the sweep stops at the first step that does not pass\n",
		len(rates), r.from, r.to, r.step, f.duration, f.warmup, ms(sweepP99))
	var bare *bareRunner
	if f.compare {
		if bare, err = openBare(ctx, f); err != nil {
			return err
		}
		defer bare.close()
		fmt.Fprintln(stdout, "--compare: each rate runs twice, the pipeline then a bare hand-written loop (poll 500 records or 50 ms → insert into ClickHouse → produce, acks from all replicas → commit) on the same brokers; each stops at its first failing step")
	}
	var steps, bareSteps []sweepStep
	pipeOn, bareOn := true, f.compare
	for i, rate := range rates {
		if !pipeOn {
			fmt.Fprintf(stdout, "\n=== sweep step %d/%d: %d events/s for %s, the bare loop alone ===\n", i+1, len(rates), rate, f.duration)
			st := bare.step(ctx, in, f, rate, stdout, stderr)
			bareSteps = append(bareSteps, st)
			if drain.Err() != nil || !st.pass {
				break
			}
			continue
		}
		fmt.Fprintf(stdout, "\n=== sweep step %d/%d: %d events/s for %s ===\n", i+1, len(rates), rate, f.duration)
		st := pipelineStep(ctx, in, f, rate, stdout, stderr)
		steps = append(steps, st)
		if drain.Err() != nil {
			fmt.Fprintf(stdout, "interrupted (%v): the sweep stops\n", context.Cause(drain))
			break
		}
		pipeOn = st.pass
		if bareOn {
			bst := bare.step(ctx, in, f, rate, stdout, stderr)
			bareSteps = append(bareSteps, bst)
			bareOn = bst.pass
			if drain.Err() != nil {
				fmt.Fprintf(stdout, "interrupted (%v): the sweep stops\n", context.Cause(drain))
				break
			}
		}
		if !pipeOn && !bareOn {
			break
		}
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "the pipeline:")
	printSweep(stdout, steps, len(rates))
	if f.compare {
		fmt.Fprintln(stdout, "the bare loop (--compare), same brokers, same generator:")
		printSweep(stdout, bareSteps, len(rates))
	}
	if note := shortWindowNote(f.duration); note != "" {
		fmt.Fprintln(stdout, note)
	}
	if f.report != "" {
		if err := writeSweepReport(f.report, f, steps, bareSteps, len(rates)); err != nil {
			return fmt.Errorf("--report: %w", err)
		}
		fmt.Fprintf(stdout, "report written to %s\n", f.report)
	}
	for _, st := range append(steps, bareSteps...) {
		if st.err != nil {
			return fmt.Errorf("sweep step at %d events/s: %w", st.rate, st.err)
		}
	}
	return nil
}

// pipelineStep runs one sustained window of the pipeline at rate.
func pipelineStep(ctx context.Context, in *interrupts, f kafkaFlags, rate int, stdout, stderr io.Writer) sweepStep {
	f.rate = rate
	f.compare = false // the bare loop runs at the rate, in a step of its own, not on a backlog
	var got *sustainedRun
	f.onSustained = func(s *sustainedRun) { got = s }
	err := demoKafka(ctx, in, f, stdout, stderr)
	st := sweepStep{rate: rate, why: "no sustained window"}
	if got != nil {
		st = stepOf(got)
	}
	return failedStep(st, err)
}

// failedStep marks st failed by err, if err is not nil.
func failedStep(st sweepStep, err error) sweepStep {
	if err != nil {
		st.err, st.pass, st.why = err, false, err.Error()
	}
	return st
}

// highest returns the highest passing rate, or 0.
func highest(steps []sweepStep) int {
	best := 0
	for _, s := range steps {
		if s.pass && s.rate > best {
			best = s.rate
		}
	}
	return best
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// printSweep writes the sweep's table and its conclusion.
func printSweep(w io.Writer, steps []sweepStep, planned int) {
	fmt.Fprintf(w, "%10s  %9s  %9s  %8s  %8s  %8s  %9s  %9s  %-4s  %-4s  %s\n",
		"rate", "in/s", "stored/s", "p50", "p90", "p99", "lag", "CPU µs/ev", "held", "pass", "why")
	for _, s := range steps {
		fmt.Fprintf(w, "%10d  %9s  %9s  %8s  %8s  %8s  %9d  %9.1f  %-4s  %-4s  %s\n",
			s.rate, si(s.in), si(s.stored), ms(s.p50), ms(s.p90), ms(s.p99), s.lag, s.cpu, yesNo(s.held), yesNo(s.pass), s.why)
	}
	if len(steps) < planned {
		fmt.Fprintf(w, "%d of %d steps run: the sweep stopped at the first step that did not pass\n", len(steps), planned)
	}
	if best := highest(steps); best > 0 {
		fmt.Fprintf(w, "highest sustainable rate: %d events/s (held, p99 consume → ClickHouse ≤ %s); a published figure for this pipeline with the brokers on other machines: 180k events/s, p50 40 ms, p99 120 ms\n", best, ms(sweepP99))
	} else {
		fmt.Fprintf(w, "no step passed: no sustainable rate found in the range\n")
	}
}

// writeSweepReport writes the HTML report to path.
func writeSweepReport(path string, f kafkaFlags, steps, bareSteps []sweepStep, planned int) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeSweepHTML(out, f, steps, bareSteps, planned); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// shortWindowNote warns, or returns "", when the windows are shorter than
// the 30 s a rate must hold to count as sustainable.
func shortWindowNote(window time.Duration) string {
	if window >= 30*time.Second {
		return ""
	}
	return fmt.Sprintf("note: %s windows are shorter than the 30 s a sustainable rate must hold: a quick look, not the finding (--duration 30s or more)", window)
}
