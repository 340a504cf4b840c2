package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// clickhouse-go's init starts a clock goroutine that never ends.
		goleak.IgnoreTopFunction("github.com/ClickHouse/clickhouse-go.init.0.func1"),
		goleak.Cleanup(func(code int) {
			stopServices()
			stopJaeger()
			if binDir != "" {
				os.RemoveAll(binDir)
			}
			os.Exit(code)
		}))
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// No command, an unknown one, or one the command no longer has: exit 2
// with the usage on stderr. No command line exits 0 without doing its
// job, but help.
func TestWithoutACommandItPrintsUsageAndExits2(t *testing.T) {
	for _, args := range [][]string{{}, {"squares"}, {"gen"}, {"nosuch"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, "usage: sluice COMMAND") || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and the usage on stderr", args, code, out, errOut)
		}
	}
}

// `sluice help` and each command's -h say what it does in words a user
// can place, each within 25 lines.
func TestHelpIsShortAndInUsersWords(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"demo", "-h"}, {"serve", "--help"}} {
		code, out, errOut := runCLI(t, args...)
		if code != 0 || errOut != "" || out == "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 0 and the help on stdout", args, code, errOut)
		}
		if n := strings.Count(out, "\n"); n > 25 {
			t.Errorf("%v: %d lines of help, want at most 25:\n%s", args, n, out)
		}
		for _, word := range []string{"seed", "write-up", "180k", "nak"} {
			if strings.Contains(strings.ToLower(out), word) {
				t.Errorf("%v: the help says %q:\n%s", args, word, out)
			}
		}
	}
	_, out, _ := runCLI(t, "help")
	if !strings.Contains(out, "  demo ") || !strings.Contains(out, "  serve ") {
		t.Errorf("sluice help lists no demo and serve:\n%s", out)
	}
}

// A bad flag prints what is wrong and one usage line, and exits 2.
func TestABadFlagPrintsTheErrorAndOneUsageLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"demo", "--events", "x"}, "invalid value"},
		{[]string{"demo", "--events", "0"}, "--events must be"},
		{[]string{"serve", "--kafka", "k:1"}, "--kafka and --clickhouse are required"},
		{[]string{"serve", "extra"}, "unexpected argument"},
		{[]string{"serve", "--kafka", "k:1", "--clickhouse", "c:1", "--epoch", "1s"}, "--epoch goes with --exactly-once"},
		{[]string{"serve", "--kafka", "k:1", "--clickhouse", "c:1", "--exactly-once", "--epoch", "1ms"}, "--epoch must be ≥ 10ms"},
		{[]string{"serve", "--kafka", "k:1", "--clickhouse", "c:1", "--exactly-once", "--repartition"}, "--exactly-once and --repartition do not go together"},
		{[]string{"serve", "--kafka", "k:1", "--clickhouse", "c:1", "--member", "a b"}, "--member must be"},
		{[]string{"serve", "--kafka", "k:1", "--clickhouse", "c:1", "--member", ""}, "--member must be"},
	} {
		code, out, errOut := runCLI(t, c.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || out != "" || len(lines) != 2 || !strings.Contains(lines[0], c.want) || !strings.HasPrefix(lines[1], "usage: sluice "+c.args[0]) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, %q and one usage line", c.args, code, out, errOut, c.want)
		}
	}
}

// The command is a user of the library like any other: its packages import
// the core's public packages only, never the root module's internal ones.
func TestMainImportsNoInternalPackageOfTheCore(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-test", "-f", `{{.ImportPath}}: {{join .Imports " "}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		if strings.Contains(line, "github.com/sluicehq/sluice/internal/") {
			t.Errorf("imports an internal package of the core: %s", strings.TrimSpace(line))
		}
	}
}
