package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/cmd/sluice/internal/cli"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"github.com/sluicehq/sluice/connect/clickhousex"
	"github.com/sluicehq/sluice/connect/kafkax"
)

const serveHelp = `usage: sluice serve --kafka BROKERS --clickhouse ADDR [flags]

Runs the market-event pipeline as a service, one member of the consumer
group NAME: it reads NAME-market, inserts each enriched batch into the
ClickHouse table NAME_events and produces it to NAME-enriched; malformed
events go to NAME-dead. Per symbol, one-second bars by event time go to
NAME_bars and NAME-bars. A record is committed once its row and enriched
record are stored. Members share the partitions; missing topics and
tables are created. SIGTERM drains: those inside stored and committed.

flags:
  --kafka BROKERS    Kafka brokers, host:port,… (required)
  --clickhouse ADDR  ClickHouse server, host:port, native protocol (required)
  --name NAME        names the topics, group and table (default demo)
  --member ID        this member's ID in the group; keep it across restarts (default HOST-PID)
  --exactly-once     NAME-enriched and NAME-dead exactly once, in Kafka transactions (no bars)
  --epoch D          with --exactly-once: a transaction per D (default 100ms)
  --partitions N     partitions of the topics it creates (default 4)
  --decoders N       decode and validate workers (default 4)
  --repartition      the input is not keyed by symbol: re-key it first
  --lookup D         round trip of one reference lookup (default 1ms)
  --dash ADDR        serve the live pipeline page at ADDR, e.g. :8080
` + observeHelp

func runServe(args []string, stdout, stderr io.Writer) int {
	var kafka, clickhouse, name, member, dash string
	var partitions, decoders int
	var repartition, exactlyOnce bool
	var epoch time.Duration
	var lookup time.Duration
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&kafka, "kafka", "", "")
	fs.StringVar(&clickhouse, "clickhouse", "", "")
	fs.StringVar(&name, "name", "demo", "")
	fs.StringVar(&member, "member", defaultMember(), "")
	fs.IntVar(&partitions, "partitions", 4, "")
	fs.IntVar(&decoders, "decoders", 4, "")
	fs.DurationVar(&lookup, "lookup", time.Millisecond, "")
	fs.StringVar(&dash, "dash", "", "")
	fs.BoolVar(&repartition, "repartition", false, "")
	fs.BoolVar(&exactlyOnce, "exactly-once", false, "")
	fs.DurationVar(&epoch, "epoch", 100*time.Millisecond, "")
	var obsFlags observeFlags
	obsFlags.register(fs)
	if code, ok := cli.ParseFlags(fs, serveHelp, args, stdout, stderr); !ok {
		return code
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if msg := obsFlags.check(set); msg != "" {
		return cli.BadFlags(fs, stderr, msg)
	}
	switch {
	case kafka == "" || clickhouse == "":
		return cli.BadFlags(fs, stderr, "--kafka and --clickhouse are required")
	case partitions < 1 || partitions > math.MaxInt32:
		return cli.BadFlags(fs, stderr, fmt.Sprintf("--partitions must be ≥ 1 (and fit in 32 bits), got %d", partitions))
	case decoders < 1 || lookup < 0:
		return cli.BadFlags(fs, stderr, "--decoders must be ≥ 1 and --lookup ≥ 0")
	case set["epoch"] && !exactlyOnce:
		return cli.BadFlags(fs, stderr, "--epoch goes with --exactly-once")
	case exactlyOnce && epoch < kafkax.MinEpoch:
		return cli.BadFlags(fs, stderr, fmt.Sprintf("--epoch must be ≥ %v, got %v", kafkax.MinEpoch, epoch))
	case exactlyOnce && repartition:
		return cli.BadFlags(fs, stderr, "--exactly-once and --repartition do not go together: the repartition topic is read by a second consumer, outside the first's transactions")
	}
	if err := onkafka.CheckName(name); err != nil {
		return cli.BadFlags(fs, stderr, err.Error())
	}
	if member == "" || len(member) > 200 || strings.IndexFunc(member, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return cli.BadFlags(fs, stderr, fmt.Sprintf("--member must be 1 to 200 characters, no space or control character, got %q", member))
	}
	var live *cli.Dash
	if dash != "" {
		var err error
		if _, err = cli.DashAddr(dash); err != nil {
			return cli.BadFlags(fs, stderr, err.Error())
		}
		if live, err = cli.StartDash(dash, stdout); err != nil {
			fmt.Fprintln(stderr, "sluice serve:", err)
			return 1
		}
	}
	ob, err := startObserving(context.Background(), obsFlags, stderr, live)
	if err != nil {
		fmt.Fprintln(stderr, "sluice serve:", err)
		if live != nil {
			live.Stop()
		}
		return 1
	}
	in := catchSignals(stderr)
	defer in.Stop()
	cfg := onkafka.KafkaConfig{Brokers: kafka, Names: onkafka.NamesFor(name), Decoders: decoders, Lookup: lookup,
		MaxInFlight: 5000, Member: true, MemberID: member, Observe: ob.Observing()}
	if repartition {
		cfg.Repartition = name + "-repartition"
	}
	if exactlyOnce {
		cfg.ExactlyOnce = epoch
	}
	err = serve(context.Background(), in.Draining(), clickhouse, partitions, cfg, ob, stdout)
	err = errors.Join(err, ob.Stop())
	if live != nil {
		err = errors.Join(err, live.Stop())
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice serve:", err)
		return 1
	}
	return 0
}

// serve creates the topics and the table if they are missing, then runs
// the pipeline as a member of its group until drain.
func serve(ctx, drain context.Context, clickhouse string, partitions int, cfg onkafka.KafkaConfig, ob *cli.Observer, stdout io.Writer) error {
	names := cfg.Names
	db, err := clickhousex.Open(ctx, clickhouse)
	if err != nil {
		return err
	}
	defer db.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(cfg.Brokers, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := onkafka.EnsureTopics(ctx, kadm.NewClient(cl), partitions, names.In, names.Out, names.Dead); err != nil {
		return err
	}
	if err := onkafka.CreateTable(ctx, db, names.Table, false); err != nil {
		return err
	}
	var bars *onkafka.BarsTally
	if cfg.ExactlyOnce == 0 {
		if err := onkafka.SetupBars(ctx, kadm.NewClient(cl), db, partitions, names.Group, &cfg); err != nil {
			return err
		}
		bars = onkafka.TallyBars(&cfg)
	}
	fmt.Fprintf(stdout, "serving: member %s of group %s, reading %s, storing in ClickHouse table %s and %s (dead letters %s), until SIGTERM\n",
		cfg.MemberID, names.Group, names.In, names.Table, names.Out, names.Dead)
	if cfg.ExactlyOnce > 0 {
		fmt.Fprintf(stdout, "exactly once: %s and %s in Kafka transactions (ID %s-%s), one per %v; ClickHouse at least once; no bars\n",
			names.Out, names.Dead, names.Group, cfg.MemberID, cfg.ExactlyOnce)
	}
	res, err := runKafka(ctx, drain, db, cfg, 0, ob.Show, stdout)
	if err != nil {
		return err
	}
	res.print(stdout, names, "sluice serve")
	if bars != nil {
		bars.Print(stdout, cfg.Bars.Names)
	}
	return nil
}

// defaultMember is --member's default: HOST-PID, a name no other running
// member has, but one a restarted process does not keep.
func defaultMember() string {
	host, err := os.Hostname()
	if err != nil || host == "" || len(host) > 150 || strings.ContainsAny(host, " \t\n") {
		host = "sluice"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}
