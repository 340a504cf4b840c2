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

func TestBadFlagsAreRejected(t *testing.T) {
	for _, args := range [][]string{
		{"squares"},
		{"bench"},
		{"nosuch"},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != 2 || errOut == "" {
			t.Fatalf("%v: got exit %d, stderr %q; want exit 2 and a message", args, code, errOut)
		}
	}
}

// `sluice help` lists the demo and says what it does in words a user can
// place: no reference to the write-ups the project grew from.
func TestHelpListsTheDemoInUsersWords(t *testing.T) {
	code, out, _ := runCLI(t, "help")
	if code != 0 || !strings.Contains(out, "  demo ") || !strings.Contains(out, "NATS JetStream") {
		t.Fatalf("sluice help: exit %d, output %q; want exit 0 and the demo with what it runs on", code, out)
	}
	if strings.Contains(strings.ToLower(out), "seed") {
		t.Errorf("sluice help mentions a seed: %q", out)
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
