// Command sluice runs a market-event pipeline built with sluice: decode,
// validate, normalise, batch, enrich, store, publish, with dead letters
// for what cannot be processed, delivering at least once.
//
//	sluice demo                                    # on an embedded NATS server: no setup
//	sluice demo --kafka BROKERS --clickhouse ADDR  # once over a backlog, on Kafka and ClickHouse
//	sluice serve --kafka BROKERS --clickhouse ADDR # as a service, one member of a consumer group
//
// `sluice COMMAND -h` prints a command's flags. The pipeline itself is the
// package market (on Kafka and ClickHouse, market/onkafka). The demo on
// NATS alone is also a command of its own, cmd/sluice/demo, which builds
// without the Kafka, ClickHouse and OpenTelemetry clients.
package main

import (
	"fmt"
	"io"
	"os"
)

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"demo", "run the pipeline once over generated events and print what happened (embedded NATS, or Kafka and ClickHouse)", runDemo},
		{"serve", "run the pipeline on Kafka and ClickHouse as a service, until SIGTERM", runServe},
	}
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run runs the command that args name and returns the exit status: 0 when
// it did its job, 1 when it failed, 2 for a command line it cannot run.
// `sluice help` prints the usage and exits 0; no command at all prints it
// to stderr and exits 2.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sluice COMMAND [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-6s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `sluice COMMAND -h` for a command's flags.")
}
