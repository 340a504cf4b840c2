package clickhousex_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// The tests share one throwaway server, started by scripts/clickhouse in a
// directory of their own and stopped at the end.
var (
	serverAddr string // native protocol, host:port
	serverErr  error  // why there is no server: every test fails with it
	serverDir  string
)

const script = "../../scripts/clickhouse"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "clickhousex-test-")
	if err != nil {
		serverErr = err
	} else {
		serverDir = dir
		defer os.RemoveAll(dir)
		defer clickhouse("stop")
		serverAddr, serverErr = startServer()
	}
	code := m.Run()
	if code == 0 {
		// Every test closes the pools it opens, and that ends their
		// goroutines.
		// The driver's init starts a clock goroutine that never ends.
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/ClickHouse/clickhouse-go.init.0.func1")); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	return code
}

// clickhouse runs scripts/clickhouse with cmd on the tests' server.
func clickhouse(cmd string) (string, error) {
	c := exec.Command(script, cmd)
	c.Env = append(os.Environ(), "SLUICE_CLICKHOUSE_DIR="+serverDir)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/clickhouse %s: %v: %s", cmd, err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

func startServer() (string, error) {
	out, err := clickhouse("start")
	if err != nil {
		return "", fmt.Errorf("%w (the tests need Debian's clickhouse-server: sudo apt-get install clickhouse-server, or run them as root with apt-get)", err)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CLICKHOUSE_ADDR="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("scripts/clickhouse start printed no CLICKHOUSE_ADDR: %q", out)
}

// needServer fails the test when there is no server.
func needServer(t testing.TB) string {
	t.Helper()
	if serverErr != nil {
		t.Fatalf("no ClickHouse server: %v", serverErr)
	}
	return serverAddr
}
