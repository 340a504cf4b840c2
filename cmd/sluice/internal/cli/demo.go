package cli

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

// DemoAbout is the first paragraph of the demo's help.
const DemoAbout = `Generates market events, some malformed, and runs a pipeline over them:
decode and validate, normalise, batch (500 events or 50 ms), enrich each
batch with one reference lookup, publish; malformed events go to a dead-
letter stream with their reason. Ctrl-C drains: those inside finish, then
a summary.
`

// DemoFlagsHelp is the help's lines for the flags DemoFlags registers,
// but --log-format (LogHelp).
const DemoFlagsHelp = `  --events N         events to generate (default 200000)
  --duration D       generate for D instead, e.g. 60s (NATS only)
  --rate R           events/s to generate (default: as fast as stored; NATS only)
  --malformed F      fraction of events made malformed (default 0.01)
  --decoders N       decode and validate workers (default 4)
  --lookup D         round trip of one reference lookup (default 1ms)
  --nats URL         use this NATS server instead (its DEMO_* streams are reset)
  --dash ADDR        serve the live pipeline page at ADDR, e.g. :8080
`

// DemoFlags are the demo's flags that every build of it has.
type DemoFlags struct {
	Events    int
	Duration  time.Duration
	Rate      int
	Malformed float64
	Decoders  int
	Lookup    time.Duration
	NATS      string
	Dash      string
	LogFormat string
}

// Register adds the flags to fs, with their defaults.
func (f *DemoFlags) Register(fs *flag.FlagSet) {
	fs.IntVar(&f.Events, "events", 200_000, "")
	fs.DurationVar(&f.Duration, "duration", 0, "")
	fs.IntVar(&f.Rate, "rate", 0, "")
	fs.Float64Var(&f.Malformed, "malformed", 0.01, "")
	fs.IntVar(&f.Decoders, "decoders", 4, "")
	fs.DurationVar(&f.Lookup, "lookup", time.Millisecond, "")
	fs.StringVar(&f.NATS, "nats", "", "")
	fs.StringVar(&f.Dash, "dash", "", "")
	fs.StringVar(&f.LogFormat, "log-format", "text", "")
}

// Check returns what is wrong with the flags, or "".
func (f *DemoFlags) Check() string {
	switch {
	case f.Events < 1:
		return fmt.Sprintf("--events must be ≥ 1, got %d", f.Events)
	case f.Duration < 0 || f.Rate < 0 || f.Lookup < 0:
		return "--duration, --rate and --lookup must be ≥ 0"
	case f.Decoders < 1:
		return fmt.Sprintf("--decoders must be ≥ 1, got %d", f.Decoders)
	case !(f.Malformed >= 0 && f.Malformed <= 1): // NaN too
		return fmt.Sprintf("--malformed must be in [0, 1], got %v", f.Malformed)
	}
	if msg := CheckLogFormat(f.LogFormat); msg != "" {
		return msg
	}
	if f.Dash != "" {
		if _, err := DashAddr(f.Dash); err != nil {
			return err.Error()
		}
	}
	return ""
}

// DemoCommand is the demo as one command presents it.
type DemoCommand struct {
	Help  string    // what -h prints
	Next  string    // the NATS summary's last line: what to try next
	Extra DemoExtra // what the command adds; nil: the demo on NATS alone
}

// DemoExtra is what a command adds to the demo on NATS: flags, ways to
// observe the run, and other places to run it. The sluice command adds
// Kafka and ClickHouse (--kafka) and OpenTelemetry (--otlp).
type DemoExtra interface {
	// Register adds the extra flags to fs.
	Register(fs *flag.FlagSet)
	// Check returns what is wrong with the flags, or "", once DemoFlags'
	// own check passed; set tells which were given on the command line.
	Check(f *DemoFlags, set map[string]bool) string
	// Observe adds to ob what the extra flags ask for.
	Observe(ctx context.Context, ob *Observer, stderr io.Writer) error
	// Run runs the demo and returns true, or returns false to leave the
	// run to NATS.
	Run(ctx context.Context, in *market.Interrupts, f DemoFlags, ob *Observer, stdout io.Writer) (bool, error)
}

// Demo runs the demo with the command line args and returns the exit
// status: 0 when it did its job, 1 when it failed, 2 for a command line
// it cannot run.
func Demo(args []string, stdout, stderr io.Writer, c DemoCommand) int {
	var f DemoFlags
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	f.Register(fs)
	if c.Extra != nil {
		c.Extra.Register(fs)
	}
	if code, ok := ParseFlags(fs, c.Help, args, stdout, stderr); !ok {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	msg := f.Check()
	if msg == "" && c.Extra != nil {
		msg = c.Extra.Check(&f, set)
	}
	if msg != "" {
		return BadFlags(fs, stderr, msg)
	}
	var live *Dash
	var err error
	if f.Dash != "" {
		if live, err = StartDash(f.Dash, stdout); err != nil {
			fmt.Fprintln(stderr, "sluice demo:", err)
			return 1
		}
	}
	ob := StartObserving(f.LogFormat, stderr, live)
	if c.Extra != nil {
		err = c.Extra.Observe(context.Background(), ob, stderr)
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice demo:", err)
		if live != nil {
			live.Stop()
		}
		return 1
	}
	in := market.CatchSignals("sluice", stderr)
	defer in.Stop()
	ran := false
	if c.Extra != nil {
		ran, err = c.Extra.Run(context.Background(), in, f, ob, stdout)
	}
	if !ran && err == nil {
		err = demoNATS(context.Background(), in, f, ob, c.Next, stdout)
	}
	err = errors.Join(err, ob.Stop())
	if live != nil {
		err = errors.Join(err, live.Stop())
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice demo:", err)
		return 1
	}
	return 0
}

// demoNATS runs the NATS demo: an embedded server unless --nats names one,
// the pipeline, and its summary. A first signal drains the pipeline; a
// second one ends the process at once, removing the embedded server's
// store all the same.
func demoNATS(ctx context.Context, in *market.Interrupts, f DemoFlags, ob *Observer, next string, stdout io.Writer) error {
	url := f.NATS
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
	cfg := market.NATSConfig{Events: f.Events, Duration: f.Duration, Rate: f.Rate, Malformed: f.Malformed,
		Decoders: f.Decoders, Lookup: f.Lookup, MaxInFlight: 5000, Storage: jetstream.FileStorage, Progress: stdout,
		OnStart: ob.Show, Observe: ob.Observing()}
	res, err := market.RunNATS(ctx, in.Draining(), url, cfg)
	if err != nil {
		return err
	}
	printNATS(stdout, res, f, next)
	return nil
}

// printNATS writes the NATS demo's summary.
func printNATS(w io.Writer, r market.NATSResult, f DemoFlags, next string) {
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
	fmt.Fprintf(t, "  dead-lettered\t%d\tevents stored in %s with their reason%s\n", r.Dead, market.NATSDead, Reasons(r.Reasons))
	fmt.Fprintf(t, "  lookups\t%d\treference lookups, one per batch\n", r.Lookups)
	t.Flush()
	fmt.Fprintln(w)
	t = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(t, "  time per event\tp50\tp99\tmax")
	fmt.Fprintf(t, "  in the pipeline: fetched → result stored\t%s\t%s\t%s\n", market.Ms(r.Latency.Q(0.5)), market.Ms(r.Latency.Q(0.99)), market.Ms(r.Latency.Max()))
	fmt.Fprintf(t, "  end to end: event stored → result stored (1 in 8)\t%s\t%s\t%s\n", market.Ms(r.EndToEnd.Q(0.5)), market.Ms(r.EndToEnd.Q(0.99)), market.Ms(r.EndToEnd.Max()))
	t.Flush()
	if f.Duration == 0 && f.Rate == 0 {
		fmt.Fprintln(w, "  (the generator runs ahead of the pipeline, so end to end includes the wait in the input stream;\n   with --rate below the pipeline's pace the two come close)")
	}
	fmt.Fprintln(w)
	PrintStages(w, r.Stages)
	if next != "" {
		fmt.Fprintln(w, "\n"+next)
	}
}
