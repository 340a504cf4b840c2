// Command sluice runs sluice's experiments: the seed programs side by side
// with sluice, measured the way the seeds measured them.
//
//	sluice squares [-n N] [-w W] [--impl naive|sluice] [--count K]
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
		{"squares", "seed 002: generator → w workers squaring → summing fan-in, plain channels vs sluice", runSquares},
		{"demo", "seed 004: market events through NATS JetStream — decode, validate, normalise, batch, enrich, publish — at-least-once", runDemo},
		{"bench", "every seed experiment side by side with sluice, peer libraries and Rust: tables, JSON, Markdown, HTML", runBench},
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
