package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
)

// Sustained mode of the Kafka load test (`loadtest kafka … --rate R
// --duration D`): the pipeline starts on the empty topic, then it
// starts `loadtest gen` as a child process that produces at R events/s for D
// (the window) while the pipeline runs, so that the pipeline process's CPU
// is the pipeline's alone. Every second the demo prints the events/s in
// (acknowledged by the broker: the topic's end offsets) and stored, the
// consumer lag (events in the topic not yet settled; with the bars, not
// yet through the main branch: see windowWatch.through), and the latency
// percentiles of the rows committed that second, consume → committed in
// ClickHouse and produced → committed. The generator first produces at R
// for the warm-up (--warmup), whose lines are marked and whose events
// count in no figure: the window opens when it ends. Once the generator
// exits the window is judged (see heldVerdict) and the pipeline drains
// what is left; the drain is reported apart, never as a sustained figure.

// lagSample is the consumer lag at one moment of the window.
type lagSample struct {
	at  time.Duration // since the window began
	lag int64
}

// heldVerdict decides whether a sustained window held its rate. Held
// means all of:
//
//   - the generator produced at least 95 % of rate × window (else the
//     figures are for a lower rate than asked);
//   - the consumer lag at the end of the window is at most rate × 1 s
//     (one second of events);
//   - the lag did not grow over the window's last half: the lag at its
//     end exceeds the lag at its middle by at most rate × 0.5 s.
//
// samples are the lag once a second and at the end of the window, in
// order; at least two are needed to judge.
func heldVerdict(rate int, window time.Duration, produced int64, samples []lagSample) (bool, string) {
	if len(samples) < 2 || window <= 0 {
		return false, "window too short to judge (fewer than two lag samples)"
	}
	if want := float64(rate) * window.Seconds(); float64(produced) < 0.95*want {
		return false, fmt.Sprintf("the generator fell short: %d events in %.1fs = %s/s of the %s/s asked",
			produced, window.Seconds(), si(float64(produced)/window.Seconds()), si(float64(rate)))
	}
	end := samples[len(samples)-1]
	mid := samples[0]
	for _, s := range samples {
		if s.at <= end.at/2 {
			mid = s
		}
	}
	switch {
	case end.lag > int64(rate):
		return false, fmt.Sprintf("lag at the end of the window is %d events, more than one second of events (%d)", end.lag, rate)
	case end.lag-mid.lag > int64(rate)/2:
		return false, fmt.Sprintf("lag grew over the window's last half, from %d at %.1fs to %d at %.1fs (more than half a second of events)",
			mid.lag, mid.at.Seconds(), end.lag, end.at.Seconds())
	}
	return true, fmt.Sprintf("lag at the end %d events (≤ %d, one second of events), %d at mid-window", end.lag, rate, mid.lag)
}

// sustainedRun is the state of one sustained run: the generator child,
// the samples and the window's figures.
type sustainedRun struct {
	f              kafkaFlags
	names          onkafka.Names
	adm            *kadm.Client
	in             *interrupts
	stdout, stderr io.Writer
	bars           *barsLab // nil: no bars

	// set by the watching goroutine, read after stop
	wstart       time.Time     // when the window opened (the warm-up ended); zero until then
	cpu0         measure       // this process's CPU when it opened
	cpuWin       time.Duration // and what it spent until it closed
	in0, stored0 int64         // in the topic and stored when it opened
	samples      []lagSample
	window       time.Duration
	produced     int64 // in the topic at the end of the window
	storedWin    int64 // rows committed during the window
	cons         market.Latencies
	prod         market.Latencies
	genLine      string
	drainWall    time.Duration
	drainEvts    int64
	err          error
}

// genArgs are the arguments of the generator child.
func (s *sustainedRun) genArgs() []string {
	return []string{"gen", "--kafka", s.f.kafka, "--topic", s.names.In,
		"--rate", strconv.Itoa(s.f.rate), "--duration", (s.f.warmup + s.f.duration).String(),
		"--malformed", strconv.FormatFloat(s.f.malformed, 'g', -1, 64), "--exit-on-stdin-eof", "--quiet"}
}

// endOffsets returns the sum of the input topic's end offsets: the events
// the broker holds (the topic was created empty).
func (s *sustainedRun) endOffsets() (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := s.adm.ListEndOffsets(ctx, s.names.In)
	if err == nil {
		err = r.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("reading the end offsets of %s: %w", s.names.In, err)
	}
	var n int64
	r.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n, nil
}

// openWindow ends the warm-up: the window's figures count from now, from
// the events in the topic and the rows stored (stored) at this moment.
func (s *sustainedRun) openWindow(now time.Time, stored int64) error {
	in, err := s.endOffsets()
	if err != nil {
		return err
	}
	s.wstart, s.in0, s.stored0 = now, in, stored
	s.cpu0 = startMeasure()
	return nil
}

// closeWindow ends the window when the generator has exited: in events in
// the topic, stored rows stored, settled records done (windowWatch.through). A window that
// never opened (the generator ended during the warm-up) stays empty.
func (s *sustainedRun) closeWindow(now time.Time, in, stored, settled int64) {
	if s.wstart.IsZero() {
		return
	}
	s.window = now.Sub(s.wstart)
	s.cpuWin = s.cpu0.stop().CPU()
	s.produced, s.storedWin = in-s.in0, stored-s.stored0
	s.samples = append(s.samples, lagSample{s.window, in - settled})
}

// sample records the lag at now, once the window is open.
func (s *sustainedRun) sample(now time.Time, lag int64) {
	if !s.wstart.IsZero() {
		s.samples = append(s.samples, lagSample{now.Sub(s.wstart), lag})
	}
}

// awaitAssigned waits until the group is stable with every partition of
// the input topic assigned, so that the window starts with the pipeline
// consuming, not joining its group; it gives up after 60 s or when
// stopped closes.
func (s *sustainedRun) awaitAssigned(stopped <-chan struct{}) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := s.adm.DescribeGroups(ctx, s.names.Group)
		cancel()
		if err == nil {
			g := r[s.names.Group]
			if g.Err == nil && g.State == "Stable" && len(r.AssignedPartitions()[s.names.In]) == s.f.partitions {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the group %s had not taken the %d partitions of %s after 60s (last error: %v)", s.names.Group, s.f.partitions, s.names.In, err)
		}
		select {
		case <-stopped:
			return errStopped
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// print writes the sustained window's summary.
func (s *sustainedRun) print(w io.Writer) {
	defer s.report()
	if s.window == 0 {
		fmt.Fprintln(w, "the generator's window did not end (interrupted): no sustained figure")
		return
	}
	held, why := heldVerdict(s.f.rate, s.window, s.produced, s.samples)
	fmt.Fprintf(w, "%s\n", s.genLine)
	if s.f.warmup > 0 {
		fmt.Fprintf(w, "warm-up: the first %s at the rate, before the window, counted in no figure below\n", s.f.warmup)
	}
	fmt.Fprintf(w, "sustained window %.2fs at --rate %d: in %s events/s (produced and acknowledged by the broker), stored %s events/s\n",
		s.window.Seconds(), s.f.rate, si(float64(s.produced)/s.window.Seconds()), si(float64(s.storedWin)/s.window.Seconds()))
	fmt.Fprintf(w, "CPU in the window: this process %.1f µs per event in (%.0f ms a second; the generator is a process of its own)\n",
		s.cpuPerEvent(), s.cpuWin.Seconds()*1e3/s.window.Seconds())
	fmt.Fprintf(w, "latency in the window, consume → row committed in ClickHouse: p50 %s  p90 %s  p99 %s  max %s\n",
		ms(s.cons.Q(0.5)), ms(s.cons.Q(0.9)), ms(s.cons.Q(0.99)), ms(s.cons.Max()))
	fmt.Fprintf(w, "latency in the window, produced → row committed in ClickHouse: p50 %s  p90 %s  p99 %s  max %s\n",
		ms(s.prod.Q(0.5)), ms(s.prod.Q(0.9)), ms(s.prod.Q(0.99)), ms(s.prod.Max()))
	if held {
		fmt.Fprintf(w, "HELD: the pipeline kept up with %d events/s: %s\n", s.f.rate, why)
	} else {
		fmt.Fprintf(w, "NOT HELD: the rate of %d events/s was not sustained: %s; the figures above are not a sustained rate\n", s.f.rate, why)
	}
	fmt.Fprintf(w, "drain after the generator stopped (not a sustained figure): %d events settled in %.2fs\n", s.drainEvts, s.drainWall.Seconds())
}

// cpuPerEvent is this process's CPU over the window per event produced
// in it, in µs: 0 for a window with no event.
func (s *sustainedRun) cpuPerEvent() float64 {
	if s.produced <= 0 {
		return 0
	}
	return s.cpuWin.Seconds() * 1e6 / float64(s.produced)
}

// report hands the run to f.onSustained (the sweep), if set.
func (s *sustainedRun) report() {
	if s.f.onSustained != nil {
		s.f.onSustained(s)
	}
}

// ktally's steady-window figures.

func (t *ktally) setSteady(on bool) {
	t.mu.Lock()
	t.steady = on
	t.mu.Unlock()
}

func (t *ktally) steadyFigures() (cons, prod market.Latencies) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.steadyCons, t.steadyProd
}

// takeWindow returns and resets the per-second latencies.
func (t *ktally) takeWindow() (cons, prod market.Latencies) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cons, prod = t.window, t.prodWindow
	t.window, t.prodWindow = market.Latencies{}, market.Latencies{}
	return cons, prod
}

// checkSustained returns what is wrong with the Kafka demo's --rate and
// --duration, or "": both or neither, the rate in [1, maxRate], the
// window at least 2 s (to judge it) and at most maxDuration.
func checkSustained(f kafkaFlags) string {
	switch {
	case f.rate == 0 && f.duration == 0:
		return ""
	case f.rate < 0 || f.rate > maxRate:
		return checkRate(f.rate)
	case f.rate == 0:
		return "--duration needs --rate: the sustained mode produces at --rate for --duration"
	case f.duration == 0:
		return "--rate needs --duration: the sustained mode produces at --rate for --duration"
	case f.duration < 2*time.Second || f.duration > maxDuration:
		return fmt.Sprintf("--duration must be at least 2s (to judge whether the rate held) and at most %s, got %s", maxDuration, f.duration)
	case f.duration+f.warmup > maxDuration:
		return fmt.Sprintf("--warmup and --duration together must be at most %s, got %s", maxDuration, f.warmup+f.duration)
	}
	return ""
}

// maxWarmup is the longest --warmup accepted.
const maxWarmup = 10 * time.Minute

// checkWarmup returns what is wrong with --warmup, or "". set tells which
// flags were given on the command line.
func checkWarmup(f kafkaFlags, set map[string]bool) string {
	switch {
	case f.warmup < 0 || f.warmup > maxWarmup:
		return fmt.Sprintf("--warmup must be from 0 to %s, got %s", maxWarmup, f.warmup)
	case set["warmup"] && f.rate == 0 && f.sweep == "":
		return "--warmup goes with the sustained mode (--rate and --duration) or --sweep"
	}
	return ""
}
