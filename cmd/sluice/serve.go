package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/cmd/sluice/internal/cli"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"github.com/sluicehq/sluice/connect/clickhousex"
)

const serveHelp = `usage: sluice serve --kafka BROKERS --clickhouse ADDR [flags]

Runs the market-event pipeline as a service, one member of the consumer
group NAME: it reads the topic NAME-market, inserts each enriched batch
into the ClickHouse table NAME_events and produces it to NAME-enriched;
malformed events go to NAME-dead. Per symbol, one-second bars by event
time (OHLC, volume, VWAP) go to the table NAME_bars and NAME-bars. A record is committed once its row and
its enriched record are both stored. Missing topics and the table are
created. Processes of one group share the partitions. SIGTERM drains: no
new records, those inside stored and committed, a summary, exit 0.

flags:
  --kafka BROKERS    Kafka brokers, host:port,… (required)
  --clickhouse ADDR  ClickHouse server, host:port, native protocol (required)
  --name NAME        names the topics, group and table (default demo)
  --partitions N     partitions of the topics it creates (default 4)
  --decoders N       decode and validate workers (default 4)
  --repartition      the input is not keyed by symbol: re-key it first
  --lookup D         round trip of one reference lookup (default 1ms)
  --dash ADDR        serve the live pipeline page at ADDR, e.g. :8080
` + observeHelp

func runServe(args []string, stdout, stderr io.Writer) int {
	var kafka, clickhouse, name, dash string
	var partitions, decoders int
	var repartition bool
	var lookup time.Duration
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&kafka, "kafka", "", "")
	fs.StringVar(&clickhouse, "clickhouse", "", "")
	fs.StringVar(&name, "name", "demo", "")
	fs.IntVar(&partitions, "partitions", 4, "")
	fs.IntVar(&decoders, "decoders", 4, "")
	fs.DurationVar(&lookup, "lookup", time.Millisecond, "")
	fs.StringVar(&dash, "dash", "", "")
	fs.BoolVar(&repartition, "repartition", false, "")
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
	}
	if err := onkafka.CheckName(name); err != nil {
		return cli.BadFlags(fs, stderr, err.Error())
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
		MaxInFlight: 5000, Member: true, Observe: ob.Observing()}
	if repartition {
		cfg.Repartition = name + "-repartition"
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
	if err := setupBars(ctx, kadm.NewClient(cl), db, partitions, names.Group, &cfg); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "serving: a member of group %s, reading %s, storing in ClickHouse table %s and %s (dead letters %s), until SIGTERM\n",
		names.Group, names.In, names.Table, names.Out, names.Dead)
	bars := tallyBars(&cfg)
	res, err := runKafka(ctx, drain, db, cfg, 0, ob.Show, stdout)
	if err != nil {
		return err
	}
	res.print(stdout, names, "sluice serve")
	bars.print(stdout, cfg.Bars.Names)
	return nil
}
