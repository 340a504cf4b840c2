// Command sluice runs sluice's demonstration: a market-event pipeline —
// decode, validate, normalise, batch, enrich, publish — on NATS JetStream
// (an embedded server, or yours with --nats), delivering at least once,
// with the live pipeline page (--dash). The benchmark lab, which compares
// sluice with other designs and libraries, is a module of its own (bench/
// in the repository), so installing this command builds none of it.
//
//	sluice demo [--dash ADDR] [--nats URL] …
//	sluice demo --kafka BROKERS --clickhouse ADDR [--rate R --duration D [--warmup W] | --sweep FROM:TO:STEP [--report FILE] | --serve] …
//	sluice gen --kafka BROKERS --topic TOPIC --rate R --duration D
//
// Run `sluice help` for the list of commands.
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
		{"demo", "a market-event pipeline on NATS JetStream — decode, validate, normalise, batch, enrich, publish — at least once, with its live page (--dash)", runDemo},
		{"gen", "a load generator: market events to a Kafka topic at --rate for --duration, each stamped with its produce time", runGen},
	}
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
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
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `sluice COMMAND -h` for a command's flags.")
}
