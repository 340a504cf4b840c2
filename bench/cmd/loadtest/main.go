// Command loadtest is the lab's load generator and meter for the market
// pipeline that `sluice demo` and `sluice serve` run (the package
// github.com/sluicehq/sluice/cmd/sluice/market): throughput, latency and
// CPU per event over a backlog, a sustained rate judged held or not, a
// sweep for the highest sustainable rate with an HTML report, and
// comparisons with bare hand-written loops on the same brokers.
//
//	go run ./bench/cmd/loadtest nats [--compare] [--storage memory] …
//	go run ./bench/cmd/loadtest kafka --kafka BROKERS --clickhouse ADDR [--compare]
//	go run ./bench/cmd/loadtest kafka … --rate R --duration D [--warmup W]
//	go run ./bench/cmd/loadtest kafka … --sweep FROM:TO:STEP [--report FILE] [--compare]
//	go run ./bench/cmd/loadtest gen --kafka BROKERS --topic TOPIC --rate R --duration D
//
// scripts/services start runs a Kafka broker and a ClickHouse server and
// prints their addresses.
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
		{"nats", "the pipeline on NATS JetStream (embedded server): events/s, latency, CPU per event; --compare: the broker's ceiling", runNATS},
		{"kafka", "the pipeline on Kafka and ClickHouse: a backlog, a sustained --rate, or a --sweep for the highest sustainable rate", runKafka},
		{"gen", "market events to a Kafka topic at --rate for --duration, each stamped with its produce time", runGen},
	}
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

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
	fmt.Fprintf(stderr, "loadtest: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: loadtest COMMAND [flags]\n\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-6s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `loadtest COMMAND -h` for a command's flags.")
}
