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
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestWithoutAKnownCommandItPrintsUsageAndExits2(t *testing.T) {
	for _, args := range [][]string{{}, {"demo"}, {"nosuch"}} {
		code, _, errOut := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, "usage: loadtest COMMAND") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and the usage", args, code, errOut)
		}
	}
}
