package main

import (
	"bytes"
	"os"
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
	code = loadtest.Run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestHelpListsEveryCommand(t *testing.T) {
	code, out, _ := runCLI(t, "help")
	for _, c := range []string{"nats ", "kafka ", "gen "} {
		if code != 0 || !strings.Contains(out, "\n  "+c) {
			t.Errorf("exit %d, stdout %q; want 0 and command %q listed", code, out, c)
		}
	}
}
