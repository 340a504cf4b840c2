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

	"github.com/sluicehq/sluice/bench/internal/cli"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
)

// pipeFlags are the load on the market pipeline and how it is measured:
// the flags `loadtest nats` and `loadtest kafka` share.
type pipeFlags struct {
	// The load: how many events, or at what rate for how long, and how
	// many of them are malformed.
	events, rate int
	duration     time.Duration
	malformed    float64

	// The pipeline: its decoding workers, its simulated lookup, and how
	// many events it holds unsettled at most.
	decoders, inflight int
	lookup             time.Duration

	compare bool   // also run the bare loop (the ceiling)
	profile string // CPU profile file
	quiet   bool   // no progress lines (tests)

	profOut *os.File // --cpuprofile's file, created before anything is contacted
}

// natsFlags are the flags of `loadtest nats`.
type natsFlags struct {
	pipeFlags
	url     string // the server; "" for an embedded one
	storage string // file or memory
}

// kafkaFlags are the flags of `loadtest kafka`.
type kafkaFlags struct {
	pipeFlags
	kafka, clickhouse string // Kafka brokers, ClickHouse server
	name              string // the topics, group and table
	partitions        int
	warmup            time.Duration // sustained mode: produced at the rate before each window, not counted
	sweep             string        // --sweep FROM:TO:STEP: sustained windows at rising rates
	report            string        // --report: the sweep's HTML report
	genExe            string        // the program started as `loadtest gen` in sustained mode (default: this one)
	bars              bool          // compute the bars beside, and check them (bars.go)

	eos    bool          // --exactly-once: the delivery modes side by side (eos.go)
	epoch  time.Duration // the transactional mode's epoch
	rounds int           // --exactly-once: throughput rounds per mode

	// onSustained, when set, gets the sustained run once its window is
	// judged (the sweep reads its figures).
	onSustained func(*sustainedRun)
}

const natsUsage = `usage: loadtest nats [flags]

The market pipeline on NATS JetStream (an embedded server, or yours with
--nats): a generator publishes market events (some malformed) while the
pipeline runs; a line a second, then events/s, latency (fetched → stored,
and input stored → output stored), CPU per event of this process and the
stages' busy and waiting time. --compare first runs the broker's ceiling:
a bare nats.go loop doing the same publishes, fetches and acks.`

const kafkaUsage = `usage: loadtest kafka --kafka BROKERS --clickhouse ADDR [flags]

The market pipeline on Kafka and ClickHouse (topics NAME-market,
NAME-enriched, NAME-dead, table NAME_events, all reset first). Beside,
as ` + "`sluice serve`" + `, per-symbol one-second bars by event time (table
NAME_bars, topics NAME-bars and NAME-late; --bars=false: none): once the
events are in, a flush of events an hour ahead closes the last windows;
the bars summary follows the run's, and the table, read with FINAL, is
checked against a plain loop's bars over the input topic: a bar
missing, different or extra fails the run.

By default over a backlog: --events are produced, then the pipeline
consumes them; --compare first runs a bare loop (poll → insert → produce
→ commit) over the same backlog: the brokers' ceiling.

--rate R --duration D: sustained. The pipeline starts on the empty topic,
then ` + "`loadtest gen`" + ` (a process of its own) produces R events/s for
--warmup (not counted), then D (the window). A line a second; then the
window is judged HELD when the generator reached 95 % of R, the lag at its
end is at most R × 1 s and grew by at most R × 0.5 s over its last half
(with the bars, the lag counts the events the main branch has not stored
or dead-lettered: the bars' windows hold theirs unsettled by design).

--sweep FROM:TO:STEP: a sustained window (--duration, default 30s) per
rate, until a step fails to hold or has p99 consume → ClickHouse above
120 ms; a table, the highest rate that passed, and with --report FILE an
HTML page. With --compare each rate also runs the bare loop.

--exactly-once: a Kafka → Kafka copy pipeline (read → stamp → produce,
no ClickHouse) in each delivery mode side by side in one run: at-least-once
reading committed records (the default), reading uncommitted ones, and
transactional (one transaction per --epoch) where kafkax has it.
Throughput over a backlog of --events, the modes interleaved for --rounds;
then, per mode, the latency from the stamp to visibility for a
read-committed consumer of the output at --rate for --duration after
--warmup, with missing and duplicate records counted.`

func (f *pipeFlags) define(fs *flag.FlagSet) {
	fs.IntVar(&f.events, "events", 200_000, "market events to generate (the backlog; ignored with --duration)")
	fs.IntVar(&f.rate, "rate", 0, "events per second to generate (nats: 0 is as fast as the server stores them; kafka: the sustained rate, with --duration)")
	fs.Float64Var(&f.malformed, "malformed", 0.01, "fraction of generated events that are malformed")
	fs.IntVar(&f.decoders, "decoders", 4, "decode+validate workers")
	fs.DurationVar(&f.lookup, "lookup", time.Millisecond, "simulated round trip of one reference-data lookup (one per batch)")
	fs.IntVar(&f.inflight, "inflight", 5000, "most events delivered and not yet settled: bounds memory and queueing latency")
	fs.StringVar(&f.profile, "cpuprofile", "", "write a CPU profile of the pipeline's run (not the ceiling) to `FILE`")
}

func runNATS(args []string, stdout, stderr io.Writer) int {
	f := natsFlags{storage: "file"}
	fs := flag.NewFlagSet("loadtest nats", flag.ContinueOnError)
	f.define(fs)
	fs.StringVar(&f.url, "nats", "", "NATS server `URL` (default: an embedded server with its store in a temporary directory)")
	fs.DurationVar(&f.duration, "duration", 0, "generate events for this long instead of --events")
	fs.StringVar(&f.storage, "storage", "file", "storage of the streams: file, or memory to take the broker's disk out of the measurement")
	fs.BoolVar(&f.compare, "compare", false, "first run the broker's ceiling — a bare nats.go loop doing the same publishes, fetches and acks — on the same server")
	return runWith(fs, natsUsage, &f.pipeFlags, f.check, args, stdout, stderr, func(ctx context.Context, in *interrupts) error {
		return demoNATS(ctx, in, f, stdout, stderr)
	})
}

func runKafka(args []string, stdout, stderr io.Writer) int {
	var f kafkaFlags
	fs := flag.NewFlagSet("loadtest kafka", flag.ContinueOnError)
	f.define(fs)
	fs.StringVar(&f.kafka, "kafka", "", "Kafka `BROKERS` (host:port,…)")
	fs.StringVar(&f.clickhouse, "clickhouse", "", "ClickHouse server `ADDR` (host:port, native protocol)")
	fs.StringVar(&f.name, "name", "loadtest", "prefix of the topics (NAME-market, NAME-enriched, NAME-dead), group (NAME) and table (NAME_events); a run deletes and re-creates them")
	fs.IntVar(&f.partitions, "partitions", 4, "partitions of the topics")
	fs.DurationVar(&f.duration, "duration", 0, "the sustained window, with --rate (with --sweep: each step's, default 30s)")
	fs.DurationVar(&f.warmup, "warmup", 5*time.Second, "with --rate or --sweep: produce at the rate for this long before each window; shown (lines marked warmup), counted in no figure (0: none, at most 10m)")
	fs.StringVar(&f.sweep, "sweep", "", "`FROM:TO:STEP` events/s: one sustained window per rate, from FROM up by STEP to TO, until a step fails")
	fs.StringVar(&f.report, "report", "", "with --sweep: write a self-contained HTML report to `FILE`")
	fs.BoolVar(&f.compare, "compare", false, "also run a bare hand-written loop (poll → insert → produce → commit) on the same brokers: over the backlog first, or at each --sweep rate")
	fs.BoolVar(&f.eos, "exactly-once", false, "instead of the market pipeline: a Kafka → Kafka copy pipeline in each delivery mode, side by side (no ClickHouse): throughput over --events (default 1000000: many epochs, so that a run measures throughput rather than its start and end), --rounds interleaved; latency to a read-committed consumer at --rate (default 20000) for --duration (default 10s)")
	fs.DurationVar(&f.epoch, "epoch", 100*time.Millisecond, "with --exactly-once: the transactional mode's epoch")
	fs.IntVar(&f.rounds, "rounds", 5, "with --exactly-once: throughput runs per mode")
	fs.BoolVar(&f.bars, "bars", true, "compute per-symbol one-second bars by event time beside (table NAME_bars, topics NAME-bars and NAME-late), as sluice serve does, and check them against a plain loop's")
	return runWith(fs, kafkaUsage, &f.pipeFlags, f.check, args, stdout, stderr, func(ctx context.Context, in *interrupts) error {
		switch {
		case f.eos:
			return demoEOS(ctx, in, f, stdout)
		case f.sweep != "":
			return sweepKafka(ctx, in, f, stdout, stderr)
		}
		return demoKafka(ctx, in, f, stdout, stderr)
	})
}

// runWith parses args with fs, checks them with check (given the flags
// set on the command line), creates --cpuprofile's file (p.profOut),
// catches signals and runs run.
func runWith(fs *flag.FlagSet, usage string, p *pipeFlags, check func(set map[string]bool) string, args []string, stdout, stderr io.Writer,
	run func(context.Context, *interrupts) error) int {
	if _, code, ok := cli.Parse(fs, usage, false, args, stdout, stderr); !ok {
		return code
	}
	if msg := check(cli.Flagged(fs)); msg != "" {
		fmt.Fprintf(stderr, "%s: %s\n", fs.Name(), msg)
		return 2
	}
	if p.profile != "" {
		var err error
		if p.profOut, err = os.Create(p.profile); err != nil {
			fmt.Fprintf(stderr, "%s: --cpuprofile: %v\n", fs.Name(), err)
			return 1
		}
	}
	in := catchSignals(stderr)
	defer in.Stop()
	err := run(context.Background(), in)
	if p.profOut != nil {
		err = errors.Join(err, p.profOut.Close())
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return 1
	}
	return 0
}

// check returns what is wrong with the pipeline's flags, or "".
func (f *pipeFlags) check() string {
	switch {
	case f.events < 1 && f.duration == 0:
		return fmt.Sprintf("--events must be ≥ 1, got %d", f.events)
	case f.duration < 0 || f.rate < 0 || f.decoders < 1 || f.lookup < 0 || f.inflight < 500:
		return "--duration, --rate and --lookup must be ≥ 0, --decoders ≥ 1, --inflight ≥ 500"
	}
	return checkMalformed(f.malformed)
}

// check returns what is wrong with the flags of `loadtest nats`, or "".
func (f *natsFlags) check(map[string]bool) string {
	if f.storage != "file" && f.storage != "memory" {
		return fmt.Sprintf("--storage must be file or memory, got %q", f.storage)
	}
	return f.pipeFlags.check()
}

// check returns what is wrong with the flags of `loadtest kafka` — set
// tells which were given on the command line — and fills in what one
// depends on another (--sweep's --duration of 30s); it returns what is
// wrong, or "".
func (f *kafkaFlags) check(set map[string]bool) string {
	if f.eos {
		return f.checkEOS(set)
	}
	if f.sweep != "" && !set["duration"] {
		f.duration = 30 * time.Second
	}
	if msg := f.pipeFlags.check(); msg != "" {
		return msg
	}
	switch {
	case f.kafka == "" || f.clickhouse == "":
		return "--kafka and --clickhouse are required (scripts/services start prints both addresses)"
	case f.partitions < 1 || f.partitions > math.MaxInt32:
		return "--partitions must be ≥ 1 (and fit in 32 bits)"
	case set["epoch"] || set["rounds"]:
		return "--epoch and --rounds go with --exactly-once"
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

// checkEOS checks the flags of --exactly-once and fills in its defaults.
func (f *kafkaFlags) checkEOS(set map[string]bool) string {
	if !set["rate"] {
		f.rate = 20000
	}
	if !set["duration"] {
		f.duration = 10 * time.Second
	}
	if !set["events"] {
		// Ten or more epochs per run at either mode's speed: over a
		// shorter backlog (100k copies in about 0.25 s at least once)
		// the first epoch's start and the last one's end are most of
		// what the ratio measures.
		f.events = 1_000_000
	}
	switch {
	case f.kafka == "":
		return "--kafka is required (scripts/kafka start prints an address)"
	case f.events < 1 || f.inflight < 500:
		return "--events must be ≥ 1, --inflight ≥ 500"
	case f.partitions < 1 || f.partitions > math.MaxInt32:
		return "--partitions must be ≥ 1 (and fit in 32 bits)"
	case f.rounds < 1 || f.epoch <= 0:
		return "--rounds must be ≥ 1 and --epoch > 0"
	case f.duration < time.Second || f.warmup < 0 || f.warmup > maxWarmup:
		return fmt.Sprintf("--duration must be ≥ 1s and --warmup from 0 to %s", maxWarmup)
	case f.sweep != "" || f.report != "" || f.compare || f.clickhouse != "" || f.profile != "":
		return "--exactly-once goes with none of --sweep, --report, --compare, --clickhouse, --cpuprofile"
	case set["malformed"] || set["decoders"] || set["lookup"] || set["bars"]:
		return "--malformed, --decoders, --lookup and --bars are the market pipeline's: --exactly-once copies records as they are"
	}
	if msg := checkRate(f.rate); msg != "" {
		return msg
	}
	if err := onkafka.CheckName(f.name); err != nil {
		return err.Error()
	}
	return ""
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
func profile(f pipeFlags) (stop func(), err error) {
	if f.profOut == nil {
		return func() {}, nil
	}
	if err := pprof.StartCPUProfile(f.profOut); err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return pprof.StopCPUProfile, nil
}
