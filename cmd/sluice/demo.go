package main

import (
	"context"
	"flag"
	"io"

	"github.com/sluicehq/sluice/cmd/sluice/internal/cli"
	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
)

const demoHelp = `usage: sluice demo [flags]

` + cli.DemoAbout + `On an embedded NATS JetStream server, or on Kafka and ClickHouse.

flags:
` + cli.DemoFlagsHelp + `  --kafka BROKERS    run on Kafka (host:port,…), with --clickhouse
  --clickhouse ADDR  ClickHouse server (host:port, native protocol)
  --name NAME        with --kafka: topics NAME-*, table NAME_events, reset (default demo)
` + observeHelp

// demoNext is the NATS summary's last line.
const demoNext = "next: watch it live with `sluice demo --dash :8080 --duration 60s --rate 20000`, or run it on Kafka and ClickHouse with `sluice demo --kafka BROKERS --clickhouse ADDR`"

func runDemo(args []string, stdout, stderr io.Writer) int {
	return cli.Demo(args, stdout, stderr, cli.DemoCommand{Help: demoHelp, Next: demoNext, Extra: &demoExtra{}})
}

// demoFlags are the flags of `sluice demo --kafka`.
type demoFlags struct {
	cli.DemoFlags
	kafka, clickhouse, name string
	ob                      *cli.Observer // the log, tracer and metrics
}

// demoExtra is what the sluice command adds to the demo: Kafka and
// ClickHouse, and OpenTelemetry.
type demoExtra struct {
	kafka, clickhouse, name string
	otlp                    otlpFlags
}

func (d *demoExtra) Register(fs *flag.FlagSet) {
	fs.StringVar(&d.kafka, "kafka", "", "")
	fs.StringVar(&d.clickhouse, "clickhouse", "", "")
	fs.StringVar(&d.name, "name", "demo", "")
	d.otlp.register(fs)
}

func (d *demoExtra) Check(_ *cli.DemoFlags, set map[string]bool) string {
	switch {
	case (d.kafka == "") != (d.clickhouse == ""):
		return "--kafka and --clickhouse go together"
	case d.kafka != "" && (set["nats"] || set["duration"] || set["rate"]):
		return "--nats, --duration and --rate go with the NATS demo, not with --kafka"
	case d.kafka == "" && set["name"]:
		return "--name goes with --kafka"
	}
	if err := onkafka.CheckName(d.name); err != nil {
		return err.Error()
	}
	return d.otlp.check(set)
}

func (d *demoExtra) Observe(ctx context.Context, ob *cli.Observer, stderr io.Writer) error {
	return startOTLP(ctx, d.otlp, ob, stderr)
}

func (d *demoExtra) Run(ctx context.Context, in *market.Interrupts, f cli.DemoFlags, ob *cli.Observer, stdout io.Writer) (bool, error) {
	if d.kafka == "" {
		return false, nil
	}
	return true, demoKafka(ctx, in, demoFlags{DemoFlags: f, kafka: d.kafka, clickhouse: d.clickhouse, name: d.name, ob: ob}, stdout)
}
