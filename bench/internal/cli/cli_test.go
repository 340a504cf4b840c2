package cli

import (
	"bytes"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

// prog has two commands that echo their arguments, and optionally a
// default.
func prog(withDefault bool) Program {
	echo := func(name string) func([]string, io.Writer, io.Writer) int {
		return func(args []string, stdout, _ io.Writer) int {
			io.WriteString(stdout, name+":"+strings.Join(args, ","))
			if len(args) == 1 && args[0] == "-h" {
				return 0
			}
			return 7
		}
	}
	p := Program{Name: "tool", Commands: []Command{{"one", "the first", echo("one")}, {"three", "the third", echo("three")}}}
	if withDefault {
		p.Default = &Command{"", "the default thing", echo("default")}
	}
	return p
}

func run(p Program, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = p.Run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunHandsTheRestOfTheArgumentsToTheNamedCommand(t *testing.T) {
	for _, withDefault := range []bool{false, true} {
		code, out, _ := run(prog(withDefault), "three", "-x", "y")
		if code != 7 || out != "three:-x,y" {
			t.Errorf("default %v: got exit %d, %q; want 7, \"three:-x,y\"", withDefault, code, out)
		}
	}
}

func TestWithoutAKnownCommandItPrintsUsageAndExits2(t *testing.T) {
	for _, args := range [][]string{{}, {"nosuch"}, {"-v"}} {
		code, _, errOut := run(prog(false), args...)
		if code != 2 || !strings.Contains(errOut, "usage: tool COMMAND") || !strings.Contains(errOut, "three  the third") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and the usage", args, code, errOut)
		}
	}
}

func TestAnArgumentThatNamesNoCommandGoesToTheDefault(t *testing.T) {
	for _, args := range [][]string{{}, {"nosuch", "a"}, {"-v", "one"}} {
		code, out, _ := run(prog(true), args...)
		if want := "default:" + strings.Join(args, ","); code != 7 || out != want {
			t.Errorf("%v: got exit %d, %q; want 7, %q", args, code, out, want)
		}
	}
}

func TestHelpPrintsTheUsageToStdoutAndExits0(t *testing.T) {
	for _, withDefault := range []bool{false, true} {
		for _, h := range []string{"help", "-h", "--help"} {
			code, out, errOut := run(prog(withDefault), h)
			if code != 0 || !strings.Contains(out, "usage: tool") || !strings.Contains(out, "one    the first") || errOut != "" {
				t.Errorf("%s (default %v): exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", h, withDefault, code, out, errOut)
			}
			if withDefault && (!strings.Contains(out, "Without a command: the default thing.") || !strings.HasSuffix(out, "\ndefault:-h")) {
				t.Errorf("%s: the usage does not say what runs without a command, then its help: %q", h, out)
			}
		}
	}
}

func flags() (*flag.FlagSet, *int, *string) {
	fs := flag.NewFlagSet("tool one", flag.ContinueOnError)
	n := fs.Int("n", 3, "how many `N`")
	s := fs.String("s", "", "a name")
	return fs, n, s
}

func parse(positional bool, args ...string) (rest []string, code int, ok bool, stdout, stderr string) {
	fs, _, _ := flags()
	var out, errOut bytes.Buffer
	rest, code, ok = Parse(fs, "usage: tool one [flags]\n\nDoes one thing.", positional, args, &out, &errOut)
	return rest, code, ok, out.String(), errOut.String()
}

func TestParseTakesArgumentsAmongTheFlagsWhenAllowed(t *testing.T) {
	fs, n, s := flags()
	rest, code, ok := Parse(fs, "", true, []string{"a", "-n", "5", "b", "-s", "x", "c"}, io.Discard, io.Discard)
	if !ok || code != 0 || *n != 5 || *s != "x" || !slices.Equal(rest, []string{"a", "b", "c"}) {
		t.Fatalf("got rest %q, code %d, ok %v, n %d, s %q; want [a b c], 0, true, 5, x", rest, code, ok, *n, *s)
	}
	if set := Flagged(fs); !set["n"] || !set["s"] || len(set) != 2 {
		t.Errorf("Flagged = %v; want n and s", set)
	}
}

func TestParseRefusesAnArgumentWhenNotAllowed(t *testing.T) {
	_, code, ok, _, errOut := parse(false, "-n", "1", "extra")
	if ok || code != 2 || !strings.Contains(errOut, `unexpected argument "extra"`) || !strings.Contains(errOut, "usage: tool one [flags]") {
		t.Errorf("got code %d, ok %v, stderr %q; want 2 and what is wrong", code, ok, errOut)
	}
}

func TestParseOfABadFlagExits2WithOneUsageLine(t *testing.T) {
	_, code, ok, out, errOut := parse(true, "-n", "many")
	if ok || code != 2 || out != "" || !strings.Contains(errOut, "invalid value") || strings.Count(errOut, "usage:") != 1 {
		t.Errorf("got code %d, ok %v, stdout %q, stderr %q; want 2, the error and one usage line on stderr", code, ok, out, errOut)
	}
}

func TestParseHelpPrintsTheHelpAndEveryFlagToStdout(t *testing.T) {
	_, code, ok, out, errOut := parse(true, "-h")
	want := "usage: tool one [flags]\n\nDoes one thing.\n\nflags:\n  --n N\n\thow many N (default 3)\n  --s string\n\ta name\n"
	if ok || code != 0 || out != want || errOut != "" {
		t.Errorf("got code %d, ok %v, stdout %q, stderr %q; want 0 and stdout %q", code, ok, out, errOut, want)
	}
}
