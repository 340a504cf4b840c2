package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	natsx "github.com/sluicehq/sluice/connect/natsx"
	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

// demoFlags are the flags of `sluice demo`.
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
	dash      string
	storage   string // file or memory
	inflight  int    // the consumer's MaxAckPending
	profile   string // CPU profile file
	quiet     bool   // no progress lines (tests)

	kafka, clickhouse string // the Kafka + ClickHouse demo: brokers, server
	name              string // its topics, group and table
	resume            bool   // consume what is left, generating nothing
	serve             bool   // a service: consume in the group until SIGTERM, resetting and generating nothing
	partitions        int
	genExe            string // the program started as `sluice gen` in sustained mode (default: this one)
	sweep             string // --sweep FROM:TO:STEP: sustained windows at rising rates
	report            string // --report: the sweep's HTML report

	// onSustained, when set, gets the sustained run once its window is
	// judged (the sweep reads its figures).
	onSustained func(*sustainedRun)

	// Claimed by runDemo before anything is contacted, so that a busy
	// port or an unwritable profile fails at once; nil when not asked for.
	live    *liveDash // serves --dash
	profOut *os.File  // --cpuprofile's file
}

// Subjects and streams of the demo. They are purged when a run starts.
const (
	demoIn       = "DEMO_MARKET"
	demoOut      = "DEMO_ENRICHED"
	demoDead     = "DEMO_DEAD"
	demoInSubj   = "market.events"
	demoOutSubj  = "market.enriched"
	demoDeadSubj = "market.dead"
	demoDurable  = "demo"
)

// demoUsage heads `sluice demo -h`; the flags follow it.
const demoUsage = `usage: sluice demo [flags]

The market-event pipeline on NATS JetStream: a generator publishes
market events (some malformed) to the stream ` + demoIn + `; the pipeline reads
them through a durable consumer, decodes and validates them in a worker pool
(malformed events go to ` + demoDeadSubj + `), normalises, batches (500 events or
50 ms), enriches each batch from reference data with one lookup, and
publishes to ` + demoOut + `. Each input is acknowledged once its result is
stored. A progress line every second, a summary at the end.

With --kafka BROKERS --clickhouse ADDR it runs the same pipeline on real brokers
instead: the generator fills the topic NAME-market, a consumer group reads
it, the same stages run, each batch is inserted into ClickHouse (table
NAME_events) and produced to NAME-enriched; dead letters go to NAME-dead.
A record is committed once its row and its enriched record are stored.

With --kafka, --rate R --duration D runs it sustained instead of on a
backlog: the pipeline starts on the empty topic, then ` + "`sluice gen`" + ` — a
process of its own, so that the demo's CPU is the pipeline's — produces R
events/s for D (the window), each stamped with its produce time. A line a
second: events/s in (acknowledged by the broker) and stored, consumer lag
(events in the topic not yet settled), and latency p50/p90/p99/max,
consume → row committed in ClickHouse and produced → committed. When the
generator ends, the window is judged HELD or NOT HELD, and the rest drains
(reported apart: a drain is not a sustained figure). Held means the
generator reached 95 % of R, the lag at the window's end is at most
R × 1 s, and it grew by at most R × 0.5 s over the window's last half.
Before the window the generator produces at R for --warmup (default 5s),
so that connections, caches and the servers' first inserts are not
measured: those lines are marked warmup and count in no figure or verdict.
--rate and --duration go together: R in [1, 10M], D from 2s to 24h.
scripts/services start runs a broker and a server and prints their
addresses.

With --kafka, --sweep FROM:TO:STEP looks for the highest sustainable rate:
one sustained window (--duration, default 30s, after its own warm-up;
topics and table reset) at FROM events/s, then FROM+STEP, … up to TO. A
step passes when it HELD and its p99 consume → ClickHouse is at most
120 ms; the sweep stops at the first step that does not pass, prints a table (rate, in/s, stored/s, p50, p90,
p99, lag, held, pass) and the highest rate that passed. --report FILE
writes a self-contained HTML page: stored events/s against p50 and p99,
with the write-up's 180k events/s, 40 ms and 120 ms as reference lines.
With --compare each rate also runs a bare hand-written loop (poll → insert
→ produce → commit) on the same brokers, fed the same way, judged alike.

With --kafka, --serve runs the pipeline alone, as a service: no reset, no
generation, a member of the consumer group NAME until SIGTERM; several
such processes share the partitions, and the partitions of one that dies
move to the others within the session timeout (6 s).

SIGINT or SIGTERM drains: the demo takes no new events, finishes and
acknowledges those inside, prints the summary, removes its temporary store
and exits 0. A second signal exits at once (status 128 + the signal).

flags:`

func runDemo(args []string, stdout, stderr io.Writer) int {
	var f demoFlags
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	f.define(fs)
	if code, ok := parseFlags(fs, demoUsage, args, stderr); !ok {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if msg := f.settle(set); msg != "" {
		fmt.Fprintln(stderr, "sluice demo:", msg)
		return 2
	}
	release, err := claim(&f, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "sluice demo:", err)
		return 1
	}
	in := catchSignals(stderr)
	defer in.stop()
	run := demo
	if f.kafka != "" {
		run = demoKafka
	}
	if f.sweep != "" {
		run = sweepKafka
	}
	err = errors.Join(run(context.Background(), in, f, stdout, stderr), release())
	if err != nil {
		fmt.Fprintln(stderr, "sluice demo:", err)
		return 1
	}
	return 0
}

// define declares the flags of `sluice demo` on fs, into f.
func (f *demoFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.nats, "nats", "", "NATS server `URL` (default: start an embedded server with its store in a temporary directory)")
	fs.IntVar(&f.events, "events", 200_000, "market events to generate (ignored with --duration; with --kafka the backlog generated before the pipeline starts)")
	fs.DurationVar(&f.duration, "duration", 0, "generate events for this long instead of --events (with --kafka: the sustained window, with --rate)")
	fs.DurationVar(&f.warmup, "warmup", 5*time.Second, "with --kafka and --rate or --sweep: produce at the rate for this long before each measured window; the warm-up is shown (lines marked warmup) but counts in no figure and no verdict (0: none, at most 10m)")
	fs.IntVar(&f.rate, "rate", 0, "events per second the generator aims at (0: as fast as the broker takes them; with --kafka: the sustained rate, with --duration)")
	fs.Float64Var(&f.malformed, "malformed", 0.01, "fraction of generated events that are malformed")
	fs.IntVar(&f.decoders, "decoders", 4, "decode+validate workers")
	fs.DurationVar(&f.lookup, "lookup", time.Millisecond, "simulated round trip of one reference-data lookup (one per batch)")
	fs.IntVar(&f.inflight, "inflight", 5000, "most events delivered and not yet acknowledged (the consumer's MaxAckPending): bounds memory and queueing latency")
	fs.StringVar(&f.storage, "storage", "file", "storage of the demo's streams: file, or memory to take the broker's disk out of the measurement")
	fs.BoolVar(&f.compare, "compare", false, "first run the broker's ceiling — a bare nats.go loop doing the same publishes, fetches and acks — on the same server")
	fs.StringVar(&f.profile, "cpuprofile", "", "write a CPU profile of the demo run (not the ceiling) to `FILE`")
	fs.StringVar(&f.kafka, "kafka", "", "run the market-event pipeline on Kafka and ClickHouse: read from and produce to the Kafka `BROKERS` (host:port,…) and store in ClickHouse (needs --clickhouse; scripts/services start runs both)")
	fs.StringVar(&f.clickhouse, "clickhouse", "", "ClickHouse server `ADDR` (host:port, native protocol) for --kafka")
	fs.StringVar(&f.name, "name", "demo", "with --kafka: prefix of the topics (NAME-market, NAME-enriched, NAME-dead), consumer group (NAME) and table (NAME_events): a letter, then letters, digits, - and _; a run deletes and re-creates them")
	fs.BoolVar(&f.resume, "resume", false, "with --kafka: neither reset nor generate; consume what the group has not committed (after an interrupted run) and stop once idle")
	fs.BoolVar(&f.serve, "serve", false, "with --kafka: run as a service — a member of the group NAME, neither resetting (missing topics and table are created) nor generating, until SIGTERM or SIGINT; N such processes share the partitions")
	fs.IntVar(&f.partitions, "partitions", 4, "with --kafka: partitions of the demo's topics")
	fs.StringVar(&f.sweep, "sweep", "", "with --kafka: `FROM:TO:STEP` events/s — one sustained window (--duration, default 30s) per rate, from FROM up by STEP to TO, until a step fails to hold or has p99 consume → ClickHouse above 120 ms; prints a table and the highest rate that passed")
	fs.StringVar(&f.report, "report", "", "with --sweep: write a self-contained HTML report (table and throughput-vs-latency chart) to `FILE`")
	fs.StringVar(&f.dash, "dash", "", "serve the live pipeline page at `ADDR` while the demo runs: :8080 listens on loopback only, 0.0.0.0:8080 on every interface")
}

// settle checks the flags — set tells which were given on the command
// line — and fills in what one depends on another (--sweep's --duration
// of 30s); it returns what is wrong, or "".
func (f *demoFlags) settle(set map[string]bool) string {
	if f.sweep != "" && !set["duration"] {
		f.duration = 30 * time.Second
	}
	for _, check := range []func() string{
		f.checkBasics,
		f.checkBrokers,
		func() string { return checkWarmup(*f, set) },
		func() string { return checkSweep(*f, set) },
		func() string { return f.checkKafka(set) },
	} {
		if msg := check(); msg != "" {
			return msg
		}
	}
	return ""
}

// checkBasics checks the flags every demo takes.
func (f *demoFlags) checkBasics() string {
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
	if f.dash != "" {
		if _, err := dashAddr(f.dash); err != nil {
			return err.Error()
		}
	}
	return ""
}

// checkBrokers checks which brokers the demo runs on.
func (f *demoFlags) checkBrokers() string {
	switch {
	case (f.kafka == "") != (f.clickhouse == ""):
		return "--kafka and --clickhouse go together (scripts/services start prints both addresses)"
	case f.kafka != "" && (f.nats != "" || f.storage != "file" || f.partitions < 1 || f.partitions > math.MaxInt32):
		return "with --kafka, --nats and --storage do not apply, and --partitions must be ≥ 1 (and fit in 32 bits)"
	}
	return ""
}

// checkKafka checks the flags that only apply with --kafka, and the modes
// that exclude each other there.
func (f *demoFlags) checkKafka(set map[string]bool) string {
	if f.kafka == "" {
		var kafkaOnly []string
		for _, name := range []string{"name", "partitions", "resume", "serve", "warmup"} {
			if set[name] {
				kafkaOnly = append(kafkaOnly, "--"+name)
			}
		}
		if len(kafkaOnly) > 0 {
			return strings.Join(kafkaOnly, ", ") + " only apply with --kafka"
		}
		return ""
	}
	if f.serve && (f.resume || f.rate > 0 || f.duration > 0 || f.compare) {
		return "--serve runs only the pipeline: --resume, --rate, --duration and --compare do not go with it"
	}
	if msg := checkSustained(*f); msg != "" && f.sweep == "" {
		return msg
	}
	if !validName.MatchString(f.name) || len(f.name) > maxNameLen {
		return fmt.Sprintf("--name must start with a letter and hold only ASCII letters, digits, - and _ (at most %d), got %q", maxNameLen, f.name)
	}
	return ""
}

// parseFlags parses args with fs, whose -h prints usage and then the
// flags. ok is false when the command ends here, with code: 0 after -h,
// 2 after a bad flag (fs has said why) or an argument that is no flag.
func parseFlags(fs *flag.FlagSet, usage string, args []string, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
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

// claim takes what the flags ask for that can fail for reasons of the
// machine's — --dash's port, --cpuprofile's file — before the demo contacts
// anything, and returns the function that releases them.
func claim(f *demoFlags, stderr io.Writer) (release func() error, err error) {
	if f.profile != "" {
		if f.profOut, err = os.Create(f.profile); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
	}
	if f.dash != "" {
		if f.live, err = startDash(f.dash, stderr); err != nil {
			if f.profOut != nil {
				f.profOut.Close()
			}
			return nil, err
		}
	}
	return func() error {
		var err error
		if f.live != nil {
			err = f.live.stop()
		}
		if f.profOut != nil {
			err = errors.Join(err, f.profOut.Close())
		}
		return err
	}, nil
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

// validName is what --name may be: its topics (NAME-enriched, at most 249
// characters), group and table (NAME_events, with - as _, unquoted in SQL)
// all take it.
var validName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

const maxNameLen = 249 - len("-enriched")

// demo runs the whole command: server, streams, optional ceiling, the
// demo itself, and its summary. When in drains (a first SIGINT or
// SIGTERM), it stops taking events, finishes what the pipeline holds,
// prints the summary and returns nil; in (which may be nil) also removes
// the temporary store if a second signal ends the process at once.
func demo(ctx context.Context, in *interrupts, f demoFlags, stdout, stderr io.Writer) (err error) {
	drain := in.Draining()
	url := f.nats
	if url == "" {
		dir, err := os.MkdirTemp("", "sluice-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		in.OnExit(func() { os.RemoveAll(dir) })
		srv, u, err := natsembed.Start(dir, 0)
		if err != nil {
			return err
		}
		defer natsembed.Stop(srv)
		url = u
		fmt.Fprintf(stdout, "embedded NATS server at %s, store in %s\n", url, dir)
	}
	nc, err := natsx.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "conditions: %s\n", conditions())

	var ceiling float64
	if f.compare {
		var ran bool
		ceiling, ran, err = runCeilingFirst(ctx, drain, stdout, "broker ceiling (bare nats.go loop: publish, fetch, publish, ack)",
			func(ctx context.Context) (ceilResult, error) { return runCeiling(ctx, url, f) })
		if !ran {
			return err
		}
	}

	if err := resetStreams(ctx, js, storageOf(f), demoIn, demoOut, demoDead); err != nil {
		return err
	}
	res, err := runMarket(ctx, drain, url, f, stdout, f.live)
	if err != nil {
		return err
	}
	res.print(stdout)
	if f.compare && ceiling > 0 {
		fmt.Fprintf(stdout, "demo / ceiling: %s / %s events/s = %.0f %%\n", si(res.perSec()), si(ceiling), 100*res.perSec()/ceiling)
	}
	return nil
}

// resetStreams deletes and re-creates the demo's streams, so that every run
// starts empty.
func resetStreams(ctx context.Context, js jetstream.JetStream, storage jetstream.StorageType, names ...string) error {
	subjects := map[string]string{demoIn: demoInSubj, demoOut: demoOutSubj, demoDead: demoDeadSubj,
		ceilIn: ceilInSubj, ceilOut: ceilOutSubj}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, name := range names {
		if err := js.DeleteStream(ctx, name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("resetting stream %s: %w", name, err)
		}
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
			Name: name, Subjects: []string{subjects[name]}, Storage: storage,
		}); err != nil {
			return fmt.Errorf("creating stream %s: %w", name, err)
		}
	}
	return nil
}

// si formats v with a k or M suffix.
func si(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// connStats is what the client connection counted, for the summary.
func connStats(nc *nats.Conn) string {
	s := nc.Stats()
	return fmt.Sprintf("client: %d msgs out, %d in, %d reconnects", s.OutMsgs, s.InMsgs, s.Reconnects)
}

func storageOf(f demoFlags) jetstream.StorageType {
	if f.storage == "memory" {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

// runCeilingFirst runs a ceiling (named what) before the demo, and
// returns its events/s. ran is false when the demo must not run: err, or
// nil after drain (a signal) stopped the ceiling.
func runCeilingFirst(ctx, drain context.Context, stdout io.Writer, what string, run func(context.Context) (ceilResult, error)) (perSec float64, ran bool, err error) {
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(drain, stop)()
	res, err := run(cctx)
	if drain.Err() != nil {
		fmt.Fprintf(stdout, "interrupted (%v) while measuring the ceiling: the demo did not run\n", context.Cause(drain))
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("ceiling: %w", err)
	}
	fmt.Fprintf(stdout, "%s: %d events in %.2fs = %s events/s\n", what, res.events, res.wall.Seconds(), si(res.perSec()))
	return res.perSec(), true, nil
}
