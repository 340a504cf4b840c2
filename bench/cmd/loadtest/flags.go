package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/pprof"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
)

// demoFlags are the flags of `loadtest nats` and `loadtest kafka`.
type demoFlags struct {
	nats      string
	events    int
	duration  time.Duration
	warmup    time.Duration // sustained mode: produced at the rate before each window, not counted
	rate      int
	malformed float64
	decoders  int
	lookup    time.Duration
	compare   bool
	storage   string // file or memory
	inflight  int    // most events received and not yet settled
	profile   string // CPU profile file
	quiet     bool   // no progress lines (tests)

	kafka, clickhouse string // Kafka brokers, ClickHouse server
	name              string // the topics, group and table
	partitions        int
	genExe            string // the program started as `loadtest gen` in sustained mode (default: this one)
	sweep             string // --sweep FROM:TO:STEP: sustained windows at rising rates
	report            string // --report: the sweep's HTML report

	// onSustained, when set, gets the sustained run once its window is
	// judged (the sweep reads its figures).
	onSustained func(*sustainedRun)

	profOut *os.File // --cpuprofile's file, created before anything is contacted
}

const natsUsage = `usage: loadtest nats [flags]

The market pipeline on NATS JetStream (an embedded server, or yours with
--nats): a generator publishes market events (some malformed) while the
pipeline runs; a line a second, then events/s, latency (fetched → stored,
and input stored → output stored), CPU per event of this process and the
stages' busy and waiting time. --compare first runs the broker's ceiling:
a bare nats.go loop doing the same publishes, fetches and acks.

flags:`

const kafkaUsage = `usage: loadtest kafka --kafka BROKERS --clickhouse ADDR [flags]

The market pipeline on Kafka and ClickHouse (topics NAME-market,
NAME-enriched, NAME-dead, table NAME_events, all reset first).

By default over a backlog: --events are produced, then the pipeline
consumes them; --compare first runs a bare loop (poll → insert → produce
→ commit) over the same backlog: the brokers' ceiling.

--rate R --duration D: sustained. The pipeline starts on the empty topic,
then ` + "`loadtest gen`" + ` (a process of its own) produces R events/s for
--warmup (not counted), then D (the window). A line a second; then the
window is judged HELD when the generator reached 95 % of R, the lag at its
end is at most R × 1 s and grew by at most R × 0.5 s over its last half.

--sweep FROM:TO:STEP: a sustained window (--duration, default 30s) per
rate, until a step fails to hold or has p99 consume → ClickHouse above
120 ms; a table, the highest rate that passed, and with --report FILE an
HTML page. With --compare each rate also runs the bare loop.

flags:`

func defineCommon(f *demoFlags, fs *flag.FlagSet) {
	fs.IntVar(&f.events, "events", 200_000, "market events to generate (the backlog; ignored with --duration)")
	fs.IntVar(&f.rate, "rate", 0, "events per second to generate (nats: 0 is as fast as the server stores them; kafka: the sustained rate, with --duration)")
	fs.Float64Var(&f.malformed, "malformed", 0.01, "fraction of generated events that are malformed")
	fs.IntVar(&f.decoders, "decoders", 4, "decode+validate workers")
	fs.DurationVar(&f.lookup, "lookup", time.Millisecond, "simulated round trip of one reference-data lookup (one per batch)")
	fs.IntVar(&f.inflight, "inflight", 5000, "most events delivered and not yet settled: bounds memory and queueing latency")
	fs.StringVar(&f.profile, "cpuprofile", "", "write a CPU profile of the pipeline's run (not the ceiling) to `FILE`")
}

func runNATS(args []string, stdout, stderr io.Writer) int {
	f := demoFlags{storage: "file"}
	fs := flag.NewFlagSet("nats", flag.ContinueOnError)
	defineCommon(&f, fs)
	fs.StringVar(&f.nats, "nats", "", "NATS server `URL` (default: an embedded server with its store in a temporary directory)")
	fs.DurationVar(&f.duration, "duration", 0, "generate events for this long instead of --events")
	fs.StringVar(&f.storage, "storage", "file", "storage of the streams: file, or memory to take the broker's disk out of the measurement")
	fs.BoolVar(&f.compare, "compare", false, "first run the broker's ceiling — a bare nats.go loop doing the same publishes, fetches and acks — on the same server")
	return runWith(fs, natsUsage, &f, args, stdout, stderr, demoNATS)
}

func runKafka(args []string, stdout, stderr io.Writer) int {
	f := demoFlags{storage: "file"}
	fs := flag.NewFlagSet("kafka", flag.ContinueOnError)
	defineCommon(&f, fs)
	fs.StringVar(&f.kafka, "kafka", "", "Kafka `BROKERS` (host:port,…)")
	fs.StringVar(&f.clickhouse, "clickhouse", "", "ClickHouse server `ADDR` (host:port, native protocol)")
	fs.StringVar(&f.name, "name", "loadtest", "prefix of the topics (NAME-market, NAME-enriched, NAME-dead), group (NAME) and table (NAME_events); a run deletes and re-creates them")
	fs.IntVar(&f.partitions, "partitions", 4, "partitions of the topics")
	fs.DurationVar(&f.duration, "duration", 0, "the sustained window, with --rate (with --sweep: each step's, default 30s)")
	fs.DurationVar(&f.warmup, "warmup", 5*time.Second, "with --rate or --sweep: produce at the rate for this long before each window; shown (lines marked warmup), counted in no figure (0: none, at most 10m)")
	fs.StringVar(&f.sweep, "sweep", "", "`FROM:TO:STEP` events/s: one sustained window per rate, from FROM up by STEP to TO, until a step fails")
	fs.StringVar(&f.report, "report", "", "with --sweep: write a self-contained HTML report to `FILE`")
	fs.BoolVar(&f.compare, "compare", false, "also run a bare hand-written loop (poll → insert → produce → commit) on the same brokers: over the backlog first, or at each --sweep rate")
	run := demoKafka
	return runWith(fs, kafkaUsage, &f, args, stdout, stderr, func(ctx context.Context, in *interrupts, f demoFlags, stdout, stderr io.Writer) error {
		if f.sweep != "" {
			return sweepKafka(ctx, in, f, stdout, stderr)
		}
		return run(ctx, in, f, stdout, stderr)
	})
}

// runWith parses args into f, checks them, creates --cpuprofile's file,
// catches signals and runs run.
func runWith(fs *flag.FlagSet, usage string, f *demoFlags, args []string, stdout, stderr io.Writer,
	run func(context.Context, *interrupts, demoFlags, io.Writer, io.Writer) error) int {
	if code, ok := parseFlags(fs, usage, args, stdout, stderr); !ok {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if msg := f.settle(fs.Name(), set); msg != "" {
		fmt.Fprintf(stderr, "loadtest %s: %s\n", fs.Name(), msg)
		return 2
	}
	if f.profile != "" {
		var err error
		if f.profOut, err = os.Create(f.profile); err != nil {
			fmt.Fprintf(stderr, "loadtest %s: --cpuprofile: %v\n", fs.Name(), err)
			return 1
		}
	}
	in := catchSignals(stderr)
	defer in.Stop()
	err := run(context.Background(), in, *f, stdout, stderr)
	if f.profOut != nil {
		err = errors.Join(err, f.profOut.Close())
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadtest %s: %v\n", fs.Name(), err)
		return 1
	}
	return 0
}

// settle checks the flags of command cmd — set tells which were given on
// the command line — and fills in what one depends on another (--sweep's
// --duration of 30s); it returns what is wrong, or "".
func (f *demoFlags) settle(cmd string, set map[string]bool) string {
	if f.sweep != "" && !set["duration"] {
		f.duration = 30 * time.Second
	}
	switch {
	case f.events < 1 && f.duration == 0:
		return fmt.Sprintf("--events must be ≥ 1, got %d", f.events)
	case f.duration < 0 || f.rate < 0 || f.decoders < 1 || f.lookup < 0 || f.inflight < 500:
		return "--duration, --rate and --lookup must be ≥ 0, --decoders ≥ 1, --inflight ≥ 500"
	case f.storage != "file" && f.storage != "memory":
		return fmt.Sprintf("--storage must be file or memory, got %q", f.storage)
	}
	if msg := checkMalformed(f.malformed); msg != "" {
		return msg
	}
	if cmd == "nats" {
		return ""
	}
	switch {
	case f.kafka == "" || f.clickhouse == "":
		return "--kafka and --clickhouse are required (scripts/services start prints both addresses)"
	case f.partitions < 1 || f.partitions > math.MaxInt32:
		return "--partitions must be ≥ 1 (and fit in 32 bits)"
	}
	for _, check := range []func() string{
		func() string { return checkWarmup(*f, set) },
		func() string { return checkSweep(*f, set) },
		func() string {
			if f.sweep == "" {
				return checkSustained(*f)
			}
			return ""
		},
	} {
		if msg := check(); msg != "" {
			return msg
		}
	}
	if err := onkafka.CheckName(f.name); err != nil {
		return err.Error()
	}
	return ""
}

// parseFlags parses args with fs. -h prints usage, then fs's flags, to
// stdout; a bad flag prints what is wrong (fs does) and one usage line to
// stderr. ok is false when the command ends here, with code: 0 after -h,
// 2 after a bad flag or an argument that is no flag.
func parseFlags(fs *flag.FlagSet, usage string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	oneLine := func() { fmt.Fprintf(stderr, "usage: loadtest %s [flags] (loadtest %[1]s -h lists them)\n", fs.Name()) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stdout, usage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0, false
		}
		oneLine()
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "loadtest %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		oneLine()
		return 2, false
	}
	return 0, true
}

// checkMalformed returns what is wrong with --malformed, or "".
func checkMalformed(v float64) string {
	if !(v >= 0 && v <= 1) { // NaN too
		return fmt.Sprintf("--malformed must be in [0, 1], got %v", v)
	}
	return ""
}

// checkRate returns what is wrong with a generator's --rate, or "".
func checkRate(r int) string {
	if r < 1 || r > maxRate {
		return fmt.Sprintf("--rate must be in [1, %d] events/s, got %d", maxRate, r)
	}
	return ""
}

// profile writes a CPU profile to f.profOut, if there is one, until the
// returned function is called.
func profile(f demoFlags) (stop func(), err error) {
	if f.profOut == nil {
		return func() {}, nil
	}
	if err := pprof.StartCPUProfile(f.profOut); err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return pprof.StopCPUProfile, nil
}
