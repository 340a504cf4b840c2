package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestNATSComparesWithTheBrokersCeiling(t *testing.T) {
	code, stdout, stderr := runCLI(t, "nats", "--events", "2000", "--compare", "--storage", "memory", "--lookup", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"embedded NATS server", "broker ceiling", "demo: 2000 events", "demo / ceiling:", "where the pipeline's time goes"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestNATSRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--events", "0"}, {"--malformed", "2"}, {"--malformed", "NaN"}, {"--inflight", "10"}, {"--decoders", "0"}, {"--storage", "tape"}, {"extra"},
	} {
		if code, _, _ := runCLI(t, append([]string{"nats"}, args...)...); code != 2 {
			t.Errorf("nats %v: exit %d; want 2", args, code)
		}
	}
}

// An unwritable --cpuprofile is reported at once, before anything is
// contacted (here an unreachable server and brokers).
func TestAnUnwritableProfileFailsBeforeContactingAnything(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "no-such-dir", "cpu.prof")
	for _, args := range [][]string{
		{"nats", "--nats", "nats://127.0.0.1:1", "--events", "10", "--cpuprofile", bad},
		{"kafka", "--kafka", "127.0.0.1:1", "--clickhouse", "127.0.0.1:1", "--events", "10", "--cpuprofile", bad},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 1 || !strings.Contains(stderr, "--cpuprofile: open "+bad) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and the profile's error", args, code, stderr)
		}
	}
}
