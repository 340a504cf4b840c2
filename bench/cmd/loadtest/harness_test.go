package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/bench/internal/services"
)

// The Kafka + ClickHouse load tests run on a real broker and server,
// started once for the package (on the first test that needs them) and
// stopped by TestMain. Missing Java, Maven or ClickHouse fails these
// tests; it does not skip them. The tests that run loadtest from outside
// run a binary built once, removed by TestMain.

var (
	servers services.Servers
	binDir  string // the built binary's directory
	built   = sync.OnceValues(func() (string, error) {
		dir, err := services.Build(context.Background(), "sluice-loadtest-test-", ".")
		binDir = dir
		return filepath.Join(dir, "loadtest"), err
	})
)

// servicesAt is what a test gets from servers: the brokers' addresses.
type servicesAt struct{ kafka, clickhouse string }

func needServices(t *testing.T) servicesAt {
	t.Helper()
	b, err := servers.Get()
	if err != nil {
		t.Fatal(err)
	}
	return servicesAt{b.Kafka, b.ClickHouse}
}

// demo is `loadtest kafka` running as a child process, TMPDIR set to a
// directory of the test's.
type demo struct {
	*services.Process
	t *testing.T
}

func startDemo(t *testing.T, args ...string) demo {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the child processes are checked through /proc, on Linux")
	}
	bin, err := built()
	if err != nil {
		t.Fatal(err)
	}
	p, err := services.Start(bin, []string{"TMPDIR=" + t.TempDir()}, append([]string{"kafka"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return demo{p, t}
}

// await returns the submatches of the next line that matches re, failing
// the test after 60s or at the end of the output.
func (d demo) await(re *regexp.Regexp) []string {
	d.t.Helper()
	m, err := d.Await(re, 60*time.Second)
	if err != nil {
		d.t.Fatalf("%v:\n%s", err, d.Output())
	}
	return m
}

// wait returns the exit code, failing the test if the process outlives
// within.
func (d demo) wait(within time.Duration) int {
	d.t.Helper()
	code, err := d.Wait(within)
	if err != nil {
		d.t.Fatalf("%v:\n%s", err, d.Output())
	}
	return code
}

// TestMain stops what the tests started, then checks that no goroutine
// is left but clickhouse-go's clock (its init starts one that never ends).
func TestMain(m *testing.M) {
	code := m.Run()
	if err := servers.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if err := goleak.Find(goleak.IgnoreTopFunction("github.com/ClickHouse/clickhouse-go.init.0.func1")); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}
