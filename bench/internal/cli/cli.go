// Package cli is the front door the lab's programs share (lab and
// loadtest): one dispatcher over named commands, and one way to parse
// flags and print them in a command's help.
//
// Exit statuses are the same everywhere: 0 when the program did its job
// (or printed the help it was asked for), 1 when it failed, 2 for a
// command line it cannot run.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Command is one command of a [Program]: Run gets the arguments after its
// name and returns the exit status.
type Command struct {
	Name, Summary string
	Run           func(args []string, stdout, stderr io.Writer) int
}

// Program is a command-line program made of [Command]s.
type Program struct {
	Name     string
	Commands []Command
	// Default, if not nil, runs when the first argument names no command
	// (a flag, an experiment's name) or there is none; it gets every
	// argument. Without it, no command at all prints the usage to stderr
	// and exits 2.
	Default *Command
}

// Main runs p with the process's arguments and exits with its status.
func (p Program) Main() { os.Exit(p.Run(os.Args[1:], os.Stdout, os.Stderr)) }

// Run runs the command that args name and returns its exit status.
// "help", "-h" and "--help" print the usage to stdout, then the default
// command's help (its Run with -h) if there is one, and return 0; an
// unknown command prints what is wrong and the usage to stderr and
// returns 2.
func (p Program) Run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			p.Usage(stdout)
			if p.Default != nil {
				fmt.Fprintln(stdout)
				return p.Default.Run([]string{"-h"}, stdout, stderr)
			}
			return 0
		}
		for _, c := range p.Commands {
			if c.Name == args[0] {
				return c.Run(args[1:], stdout, stderr)
			}
		}
	}
	if p.Default != nil {
		return p.Default.Run(args, stdout, stderr)
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "%s: unknown command %q\n", p.Name, args[0])
	}
	p.Usage(stderr)
	return 2
}

// Usage prints the program's commands.
func (p Program) Usage(w io.Writer) {
	if p.Default != nil {
		fmt.Fprintf(w, "usage: %s [COMMAND] [flags]\n\n", p.Name)
		fmt.Fprintf(w, "Without a command: %s.\n\n", p.Default.Summary)
	} else {
		fmt.Fprintf(w, "usage: %s COMMAND [flags]\n\n", p.Name)
	}
	fmt.Fprintln(w, "commands:")
	width := 0
	for _, c := range p.Commands {
		width = max(width, len(c.Name))
	}
	for _, c := range p.Commands {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name, c.Summary)
	}
	fmt.Fprintf(w, "\nRun `%s COMMAND -h` for a command's flags.\n", p.Name)
}

// Parse parses args with fs, whose name is the command's as the user
// types it ("loadtest kafka"). Arguments that are not flags may stand
// among the flags; they are returned in order, and any is refused unless
// positional is true. -h prints help, then fs's flags ([PrintFlags]), to
// stdout. A bad flag prints what is wrong (fs does) and one usage line to
// stderr. ok is false when the command ends here, with code: 0 after -h,
// 2 after a bad flag or a refused argument.
func Parse(fs *flag.FlagSet, help string, positional bool, args []string, stdout, stderr io.Writer) (rest []string, code int, ok bool) {
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	oneLine := func() { fmt.Fprintf(stderr, "usage: %s [flags] (%[1]s -h lists them)\n", fs.Name()) }
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintln(stdout, strings.TrimRight(help, "\n"))
				fmt.Fprintln(stdout, "\nflags:")
				PrintFlags(stdout, fs)
				return nil, 0, false
			}
			oneLine()
			return nil, 2, false
		}
		if fs.NArg() == 0 {
			return rest, 0, true
		}
		if !positional {
			fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
			oneLine()
			return nil, 2, false
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// PrintFlags prints fs's flags, each as --name, then its usage and its
// default where it has one that says something.
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		arg := ""
		if name != "" {
			arg = " " + name
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			def = " (default " + f.DefValue + ")"
		}
		fmt.Fprintf(w, "  --%s%s\n\t%s%s\n", f.Name, arg, usage, def)
	})
}

// Flagged returns the names of the flags args set on fs, once parsed:
// what the user gave, as against defaults.
func Flagged(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
