// Command demo is `sluice demo` on an embedded NATS server, alone: the
// README's first command, `go run ./cmd/sluice/demo`. It builds from the
// core, the live page and the NATS connector only — none of the Kafka,
// ClickHouse and OpenTelemetry clients that the sluice command links for
// `sluice demo --kafka`, `sluice serve` and --otlp — so that a first run
// compiles in about half the time.
package main

import (
	"os"

	"github.com/sluicehq/sluice/cmd/sluice/internal/cli"
)

const help = `usage: go run ./cmd/sluice/demo [flags]

` + cli.DemoAbout + `On an embedded NATS JetStream server. The sluice command (go run
./cmd/sluice demo) runs the same demo, and on Kafka and ClickHouse too.

flags:
` + cli.DemoFlagsHelp + cli.LogHelp

const next = "next: watch it live with `go run ./cmd/sluice/demo --dash :8080 --duration 60s --rate 20000`, or run it on Kafka and ClickHouse with `go run ./cmd/sluice demo --kafka BROKERS --clickhouse ADDR`"

func main() {
	os.Exit(cli.Demo(os.Args[1:], os.Stdout, os.Stderr, cli.DemoCommand{Help: help, Next: next}))
}
