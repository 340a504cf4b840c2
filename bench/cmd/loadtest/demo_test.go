package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// --exactly-once takes the flags of its own measurement and refuses the
// market pipeline's, before contacting anything.
func TestExactlyOnceBadFlagsExit2BeforeContactingAnything(t *testing.T) {
	addr, accepted := listener(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--kafka"},
		{[]string{"--kafka", addr, "--clickhouse", addr}, "--clickhouse"},
		{[]string{"--kafka", addr, "--rounds", "0"}, "--rounds"},
		{[]string{"--kafka", addr, "--epoch", "0s"}, "--epoch"},
		{[]string{"--kafka", addr, "--rate", "0"}, "--rate"},
		{[]string{"--kafka", addr, "--duration", "100ms"}, "--duration"},
		{[]string{"--kafka", addr, "--decoders", "2"}, "--decoders"},
		{[]string{"--kafka", addr, "--sweep", "1000:2000:1000"}, "--sweep"},
		{[]string{"--kafka", addr, "--events", "0"}, "--events"},
	} {
		args := append([]string{"kafka", "--exactly-once"}, c.args...)
		code, _, errOut := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message with %q", args, code, errOut, c.want)
		}
	}
	if code, _, errOut := runCLI(t, "kafka", "--kafka", addr, "--clickhouse", addr, "--rounds", "3"); code != 2 || !strings.Contains(errOut, "--exactly-once") {
		t.Errorf("--rounds without --exactly-once: exit %d, stderr %q; want 2 naming --exactly-once", code, errOut)
	}
	time.Sleep(100 * time.Millisecond)
	if n := accepted.Load(); n > 0 {
		t.Errorf("bad flags: %d connections to the broker; want none", n)
	}
}

// Each command's -h lists its own flags and no other command's.
func TestEachCommandsHelpListsItsOwnFlags(t *testing.T) {
	for _, c := range []struct {
		cmd        string
		has, lacks []string
	}{
		{"nats", []string{"--nats URL", "--storage", "--events", "--compare"}, []string{"--kafka", "--clickhouse", "--sweep", "--exactly-once"}},
		{"kafka", []string{"--kafka BROKERS", "--clickhouse ADDR", "--sweep", "--exactly-once", "--epoch", "--rounds", "--warmup"}, []string{"--nats", "--storage", "--topic"}},
		{"gen", []string{"--topic TOPIC", "--rate", "--seed"}, []string{"--clickhouse", "--sweep", "--decoders"}},
	} {
		code, out, _ := runCLI(t, c.cmd, "-h")
		if code != 0 {
			t.Errorf("%s -h: exit %d; want 0", c.cmd, code)
		}
		for _, f := range c.has {
			if !strings.Contains(out, "\n  "+f) {
				t.Errorf("%s -h does not list %s:\n%s", c.cmd, f, out)
			}
		}
		for _, f := range c.lacks {
			if strings.Contains(out, "\n  "+f) {
				t.Errorf("%s -h lists %s, not its flag", c.cmd, f)
			}
		}
	}
}
