package main

import (
	"bytes"
	"strings"
	"testing"
)

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
