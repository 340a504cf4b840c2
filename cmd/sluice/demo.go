package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

const demoHelp = `usage: sluice demo [flags]

Generates market events, some malformed, and runs a pipeline over them:
decode and validate, normalise, batch (500 events or 50 ms), enrich each
batch with one reference lookup, publish; malformed events go to a dead-
letter stream with their reason. On an embedded NATS JetStream server, or
on Kafka and ClickHouse. Ctrl-C drains: those inside finish, then a summary.

flags:
  --events N         events to generate (default 200000)
  --duration D       generate for D instead, e.g. 60s (NATS only)
  --rate R           events/s to generate (default: as fast as stored; NATS only)
  --malformed F      fraction of events made malformed (default 0.01)
  --decoders N       decode and validate workers (default 4)
  --lookup D         round trip of one reference lookup (default 1ms)
  --nats URL         use this NATS server instead (its DEMO_* streams are reset)
  --dash ADDR        serve the live pipeline page at ADDR, e.g. :8080
  --kafka BROKERS    run on Kafka (host:port,…), with --clickhouse
  --clickhouse ADDR  ClickHouse server (host:port, native protocol)
  --name NAME        with --kafka: topics NAME-*, table NAME_events, reset (default demo)
` + observeHelp

// demoFlags are the flags of `sluice demo`.
type demoFlags struct {
	events                  int
	duration                time.Duration
	rate                    int
	malformed               float64
	decoders                int
	lookup                  time.Duration
	nats, dash              string
	kafka, clickhouse, name string
	observe                 observeFlags
	live                    *liveDash // serves --dash, claimed before anything is contacted
	ob                      *observer // the log, tracer and metrics
}

func runDemo(args []string, stdout, stderr io.Writer) int {
	var f demoFlags
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.IntVar(&f.events, "events", 200_000, "")
	fs.DurationVar(&f.duration, "duration", 0, "")
	fs.IntVar(&f.rate, "rate", 0, "")
	fs.Float64Var(&f.malformed, "malformed", 0.01, "")
	fs.IntVar(&f.decoders, "decoders", 4, "")
	fs.DurationVar(&f.lookup, "lookup", time.Millisecond, "")
	fs.StringVar(&f.nats, "nats", "", "")
	fs.StringVar(&f.dash, "dash", "", "")
	fs.StringVar(&f.kafka, "kafka", "", "")
	fs.StringVar(&f.clickhouse, "clickhouse", "", "")
	fs.StringVar(&f.name, "name", "demo", "")
	f.observe.register(fs)
	if code, ok := parseFlags(fs, demoHelp, args, stdout, stderr); !ok {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if msg := f.check(set); msg != "" {
		return badFlags(fs, stderr, msg)
	}
	var err error
	if f.dash != "" {
		if f.live, err = startDash(f.dash, stdout); err != nil {
			fmt.Fprintln(stderr, "sluice demo:", err)
			return 1
		}
	}
	if f.ob, err = startObserving(context.Background(), f.observe, stderr, f.live); err != nil {
		fmt.Fprintln(stderr, "sluice demo:", err)
		if f.live != nil {
			f.live.stop()
		}
		return 1
	}
	in := catchSignals(stderr)
	defer in.Stop()
	if f.kafka != "" {
		err = demoKafka(context.Background(), in, f, stdout)
	} else {
		err = demoNATS(context.Background(), in, f, stdout)
	}
	err = errors.Join(err, f.ob.stop())
	if f.live != nil {
		err = errors.Join(err, f.live.stop())
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice demo:", err)
		return 1
	}
	return 0
}

// check returns what is wrong with the flags, or "". set tells which were
// given on the command line.
func (f *demoFlags) check(set map[string]bool) string {
	switch {
	case f.events < 1:
		return fmt.Sprintf("--events must be ≥ 1, got %d", f.events)
	case f.duration < 0 || f.rate < 0 || f.lookup < 0:
		return "--duration, --rate and --lookup must be ≥ 0"
	case f.decoders < 1:
		return fmt.Sprintf("--decoders must be ≥ 1, got %d", f.decoders)
	case !(f.malformed >= 0 && f.malformed <= 1): // NaN too
		return fmt.Sprintf("--malformed must be in [0, 1], got %v", f.malformed)
	case (f.kafka == "") != (f.clickhouse == ""):
		return "--kafka and --clickhouse go together"
	case f.kafka != "" && (set["nats"] || set["duration"] || set["rate"]):
		return "--nats, --duration and --rate go with the NATS demo, not with --kafka"
	case f.kafka == "" && set["name"]:
		return "--name goes with --kafka"
	}
	if err := market.CheckName(f.name); err != nil {
		return err.Error()
	}
	if msg := f.observe.check(set); msg != "" {
		return msg
	}
	if f.dash != "" {
		if _, err := dashAddr(f.dash); err != nil {
			return err.Error()
		}
	}
	return ""
}

// demoNATS runs the NATS demo: an embedded server unless --nats names one,
// the pipeline, and its summary. A first signal drains the pipeline; a
// second one ends the process at once, removing the embedded server's
// store all the same.
func demoNATS(ctx context.Context, in *interrupts, f demoFlags, stdout io.Writer) error {
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
		fmt.Fprintf(stdout, "embedded NATS server at %s, its store in %s (removed at the end)\n", url, dir)
	}
	cfg := market.NATSConfig{Events: f.events, Duration: f.duration, Rate: f.rate, Malformed: f.malformed,
		Decoders: f.decoders, Lookup: f.lookup, MaxInFlight: 5000, Storage: jetstream.FileStorage, Progress: stdout,
		OnStart: f.ob.show, Observe: f.ob.observe()}
	res, err := market.RunNATS(ctx, in.Draining(), url, cfg)
	if err != nil {
		return err
	}
	printNATS(stdout, res, f)
	return nil
}

// printNATS writes the NATS demo's summary.
func printNATS(w io.Writer, r market.NATSResult, f demoFlags) {
	fmt.Fprintln(w)
	if r.Drained != nil {
		fmt.Fprintf(w, "interrupted (%v), drained: of the %d events the pipeline had received, %d were stored and acknowledged, %d handed back to the server unprocessed (it delivers them again), %d left unsettled\n",
			r.Drained, r.Source.Received, r.Source.Acked, r.Source.HandedBack, r.Source.InFlight)
	}
	fmt.Fprintf(w, "sluice demo: %d events through the pipeline in %.2f s, %s events/s\n\n",
		r.Stored+r.Dead, r.Wall.Seconds(), market.SI(r.PerSec()))
	t := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(t, "  generated\t%d\tevents stored in the input stream %s\n", r.Generated, market.NATSIn)
	fmt.Fprintf(t, "  enriched\t%d\tevents enriched and stored in %s\n", r.Stored, market.NATSOut)
	fmt.Fprintf(t, "  dead-lettered\t%d\tevents stored in %s with their reason%s\n", r.Dead, market.NATSDead, reasons(r.Reasons))
	fmt.Fprintf(t, "  lookups\t%d\treference lookups, one per batch\n", r.Lookups)
	t.Flush()
	fmt.Fprintln(w)
	t = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(t, "  time per event\tp50\tp99\tmax")
	fmt.Fprintf(t, "  in the pipeline: fetched → result stored\t%s\t%s\t%s\n", market.Ms(r.Latency.Q(0.5)), market.Ms(r.Latency.Q(0.99)), market.Ms(r.Latency.Max()))
	fmt.Fprintf(t, "  end to end: event stored → result stored (1 in 8)\t%s\t%s\t%s\n", market.Ms(r.EndToEnd.Q(0.5)), market.Ms(r.EndToEnd.Q(0.99)), market.Ms(r.EndToEnd.Max()))
	t.Flush()
	if f.duration == 0 && f.rate == 0 {
		fmt.Fprintln(w, "  (the generator runs ahead of the pipeline, so end to end includes the wait in the input stream;\n   with --rate below the pipeline's pace the two come close)")
	}
	fmt.Fprintln(w)
	printStages(w, r.Stages)
	fmt.Fprintln(w, "\nnext: watch it live with `sluice demo --dash :8080 --duration 60s --rate 20000`, or run it on Kafka and ClickHouse with `sluice demo --kafka BROKERS --clickhouse ADDR`")
}
