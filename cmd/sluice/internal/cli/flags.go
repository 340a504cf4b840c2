// Package cli is what the sluice command and the NATS demo's own small
// command (cmd/sluice/demo) share: the command line's handling, the live
// page, the log, and the demo on NATS itself. It is a package of its own
// so that the small command builds without the Kafka, ClickHouse and
// OpenTelemetry clients that the sluice command links.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// ParseFlags parses args with fs. -h prints help, then fs's flags, to
// stdout. A bad flag prints what is wrong (fs does) and one usage line to
// stderr. ok is false when the command ends here, with code: 0 after -h,
// 2 after a bad flag or an argument that is no flag.
func ParseFlags(fs *flag.FlagSet, help string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
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

// BadFlags reports what is wrong with a command line that parsed, and the
// usage line; it returns 2, the status of a command line that cannot run.
func BadFlags(fs *flag.FlagSet, stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "sluice %s: %s\n", fs.Name(), msg)
	usageLine(fs, stderr)
	return 2
}

func usageLine(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "usage: sluice %s [flags] (sluice %[1]s -h lists them)\n", fs.Name())
}
