package main

import (
	"regexp"
	"strings"
	"testing"
)

var (
	eosMedian  = regexp.MustCompile(`^  (at-least-once, read committed|at-least-once, read uncommitted|transactional, epoch 100ms) +\S+ records/s`)
	eosLatency = regexp.MustCompile(`^  (at-least-once, read committed|transactional, epoch 100ms) +p50 \S+ +p99 \S+ +max \S+ +\((\d+) records in the window, generator at \S+/s; (\d+) missing, (\d+) duplicates\)$`)
	eosTxns    = regexp.MustCompile(`^ +(last round: )?[1-9]\d* transactions committed, \d+ aborted; epoch \S+, commit \S+ \(means\)`)
)

// A small --exactly-once run on the real broker: every mode's throughput
// (each run checks that every record was settled and produced), the
// latency of at-least-once and transactional with no record missing or
// duplicated, and the verdicts on #36's targets.
func TestExactlyOnceMeasuresEveryModeSideBySide(t *testing.T) {
	s := needServices(t)
	code, out, errOut := runCLI(t, "kafka", "--exactly-once", "--kafka", s.kafka, "--name", "eos",
		"--events", "3000", "--rounds", "1", "--rate", "1000", "--duration", "2s", "--warmup", "1s")
	if code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errOut)
	}
	t.Log(out)
	medians, latencies := map[string]bool{}, map[string]bool{}
	var txnLines int
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		if m := eosMedian.FindStringSubmatch(line); m != nil {
			medians[m[1]] = true
		}
		if m := eosLatency.FindStringSubmatch(line); m != nil {
			latencies[m[1]] = true
			if m[2] != "2000" || m[3] != "0" || m[4] != "0" {
				t.Errorf("%s: %s records in the window, %s missing, %s duplicates; want 2000, 0, 0", m[1], m[2], m[3], m[4])
			}
		}
		if eosTxns.MatchString(line) {
			txnLines++
		}
	}
	if len(medians) != 3 || len(latencies) != 2 || txnLines != 2 {
		t.Errorf("%d modes' throughput, %d modes' latency, %d lines of transactions; want 3, 2 and 2", len(medians), len(latencies), txnLines)
	}
	for _, want := range []string{"read committed vs read uncommitted (at-least-once): ", "/ at-least-once (read committed): ", "against the target epoch + 50 ms = 150ms: "} {
		if !strings.Contains(out, want) {
			t.Errorf("no line with %q", want)
		}
	}
}
