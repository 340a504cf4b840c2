package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/cmd/sluice/internal/cli"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The demo builds from the core, dash and natsx: none of the clients the
// sluice command adds for Kafka, ClickHouse and OpenTelemetry, whose
// compilation doubled the README's first command's.
func TestTheDemoLinksNoKafkaClickHouseOrOpenTelemetry(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := string(out)
	for _, p := range []string{"github.com/sluicehq/sluice", "github.com/sluicehq/sluice/dash",
		"github.com/sluicehq/sluice/connect/natsx", "github.com/sluicehq/sluice/connect/natsx/natsembed"} {
		if !strings.Contains(deps, p+"\n") {
			t.Errorf("the demo does not build %s: go list -deps says\n%s", p, deps)
		}
	}
	for _, bad := range []string{"franz-go", "kafkax", "clickhouse", "ClickHouse", "opentelemetry", "otelx", "onkafka", "google.golang.org/grpc", "protobuf"} {
		for l := range strings.Lines(deps) {
			if strings.Contains(l, bad) {
				t.Errorf("the demo depends on %s", strings.TrimSpace(l))
			}
		}
	}
}

// The demo runs on its embedded server and prints its summary; the flags
// of the sluice command's demo that need the clients it lacks are no
// flags here.
func TestTheDemoRunsOnNATSAndKnowsNoKafkaFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := cli.Demo([]string{"--events", "3000", "--lookup", "0"}, &out, &errOut, cli.DemoCommand{Help: help, Next: next}); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"embedded NATS server at", "sluice demo: 3000 events through the pipeline", "go run ./cmd/sluice/demo --dash"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, out.String())
		}
	}
	for _, flag := range []string{"--kafka", "--otlp"} {
		out.Reset()
		errOut.Reset()
		if code := cli.Demo([]string{flag, "x:1"}, &out, &errOut, cli.DemoCommand{Help: help, Next: next}); code != 2 || !strings.Contains(errOut.String(), "flag provided but not defined") {
			t.Errorf("%s: exit %d, stderr %q; want 2 and an unknown flag", flag, code, errOut.String())
		}
	}
	out.Reset()
	if code := cli.Demo([]string{"-h"}, &out, &errOut, cli.DemoCommand{Help: help, Next: next}); code != 0 || strings.Count(out.String(), "\n") > 25 || !strings.Contains(out.String(), "--events N") {
		t.Errorf("-h: exit %d, %d lines:\n%s", code, strings.Count(out.String(), "\n"), out.String())
	}
}
