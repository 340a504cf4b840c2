package main

import (
	"net"
	"regexp"
	"strings"
	"testing"
)

// The demo's summary is a table in words: what was generated, enriched
// and dead-lettered (by reason), each latency named by what it measures,
// the stages, and what to try next; no Go value printed raw.
func TestDemoPrintsASummaryAUserCanRead(t *testing.T) {
	code, out, errOut := runCLI(t, "demo", "--events", "3000", "--lookup", "0", "--malformed", "0.05")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`embedded NATS server at nats://`),
		regexp.MustCompile(`sluice demo: 3000 events through the pipeline in [0-9.]+ s`),
		regexp.MustCompile(`(?m)^  generated +3000 +events stored in the input stream`),
		regexp.MustCompile(`(?m)^  enriched +\d+ +events enriched and stored`),
		regexp.MustCompile(`(?m)^  dead-lettered +[1-9]\d* +events stored in DEMO_DEAD with their reason: [a-z ]+ \d+`),
		regexp.MustCompile(`(?m)^  in the pipeline: fetched → result stored +\S+ms +\S+ms +\S+ms$`),
		regexp.MustCompile(`(?m)^  end to end: event stored → result stored`),
		regexp.MustCompile(`(?m)^ +stage +workers +in +out +failed +busy +waiting`),
		regexp.MustCompile(`(?m)^next: `),
	} {
		if !want.MatchString(out) {
			t.Errorf("output lacks %v:\n%s", want, out)
		}
	}
	for _, bad := range []string{"{", "map[", "seed", "write-up", "nak"} {
		if strings.Contains(out, bad) {
			t.Errorf("output holds %q:\n%s", bad, out)
		}
	}
}

func TestDemoRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--events", "0"}, {"--malformed", "2"}, {"--malformed", "NaN"}, {"--decoders", "0"}, {"--lookup", "-1s"}, {"extra"},
		{"--kafka", "127.0.0.1:1"}, {"--clickhouse", "127.0.0.1:1"}, {"--name", "x"},
		{"--kafka", "127.0.0.1:1", "--clickhouse", "127.0.0.1:1", "--duration", "1s"},
		{"--kafka", "127.0.0.1:1", "--clickhouse", "127.0.0.1:1", "--nats", "nats://x"},
	} {
		if code, _, _ := runCLI(t, append([]string{"demo"}, args...)...); code != 2 {
			t.Errorf("demo %v: exit %d; want 2", args, code)
		}
	}
}

func TestDemoReportsAnUnreachableServer(t *testing.T) {
	code, _, stderr := runCLI(t, "demo", "--nats", "nats://127.0.0.1:1", "--events", "10")
	if code != 1 || !strings.Contains(stderr, "natsx: connect to nats://127.0.0.1:1") {
		t.Fatalf("exit %d, stderr %q; want 1 and an error naming the server", code, stderr)
	}
}

// A busy --dash port is reported at once, before the demo or the service
// connects to anything (here an unreachable server, which would fail
// otherwise).
func TestABusyDashPortFailsBeforeContactingAnything(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	want := "--dash: listen tcp " + busy.Addr().String()
	for _, args := range [][]string{
		{"demo", "--nats", "nats://127.0.0.1:1", "--events", "10", "--dash", busy.Addr().String()},
		{"demo", "--kafka", "127.0.0.1:1", "--clickhouse", "127.0.0.1:1", "--events", "10", "--dash", busy.Addr().String()},
		{"serve", "--kafka", "127.0.0.1:1", "--clickhouse", "127.0.0.1:1", "--dash", busy.Addr().String()},
	} {
		code, _, stderr := runCLI(t, args...)
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", args, code, stderr, want)
		}
	}
}
