// Command sluice runs a market-event pipeline built with sluice: decode,
// validate, normalise, batch, enrich, store, publish, with dead letters
// for what cannot be processed, delivering at least once.
//
//	sluice demo                                    # on an embedded NATS server: no setup
//	sluice demo --kafka BROKERS --clickhouse ADDR  # once over a backlog, on Kafka and ClickHouse
//	sluice serve --kafka BROKERS --clickhouse ADDR # as a service, one member of a consumer group
//
// `sluice COMMAND -h` prints a command's flags. The pipeline itself is the
// package market.
package main

import (
	"errors"
	"flag"
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

// parseFlags parses args with fs. -h prints help, then fs's flags, to
// stdout. A bad flag prints what is wrong (fs does) and one usage line to
// stderr. ok is false when the command ends here, with code: 0 after -h,
// 2 after a bad flag or an argument that is no flag.
func parseFlags(fs *flag.FlagSet, help string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			return 0, false
		}
		usageLine(fs, stderr)
		return 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		usageLine(fs, stderr)
		return 2, false
	}
	return 0, true
}

// badFlags reports what is wrong with a command line that parsed, and the
// usage line; it returns 2, the status of a command line that cannot run.
func badFlags(fs *flag.FlagSet, stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "sluice %s: %s\n", fs.Name(), msg)
	usageLine(fs, stderr)
	return 2
}

func usageLine(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "usage: sluice %s [flags] (sluice %[1]s -h lists them)\n", fs.Name())
}
