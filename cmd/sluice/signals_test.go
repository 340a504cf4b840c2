package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// cliBinary builds the command once for the tests that run it from
// outside; the binary is removed by TestMain's cleanup of its directory.
var cliBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "sluice-cli-test-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "sluice")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

var binDir string // removed after the tests

// demoProcess is `sluice demo` running as a child process with TMPDIR set
// to a directory of the test's, its stdout and stderr read line by line.
type demoProcess struct {
	cmd    *exec.Cmd
	tmp    string
	lines  chan string // closed at EOF, once the process has exited
	mu     sync.Mutex
	output strings.Builder
}

func startDemo(t *testing.T, args ...string) *demoProcess {
	t.Helper()
	return startCLI(t, append([]string{"demo"}, args...)...)
}

// startCLI starts the built command with args.
func startCLI(t *testing.T, args ...string) *demoProcess {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("signals and /proc/net/tcp are checked on Linux")
	}
	bin, err := cliBinary()
	if err != nil {
		t.Fatal(err)
	}
	d := &demoProcess{tmp: t.TempDir(), lines: make(chan string, 1024)}
	d.cmd = exec.Command(bin, args...)
	d.cmd.Env = append(os.Environ(), "TMPDIR="+d.tmp)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stdout, d.cmd.Stderr = pw, pw
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	go func() {
		defer close(d.lines)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			d.mu.Lock()
			d.output.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
			select {
			case d.lines <- sc.Text():
			default: // nobody waits for this line
			}
		}
	}()
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			d.cmd.Process.Kill()
			d.cmd.Wait()
		}
		for range d.lines {
		}
	})
	return d
}

// await returns the first line from now on that matches re, failing the
// test after a timeout.
func (d *demoProcess) await(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-d.lines:
			if !ok {
				t.Fatalf("the demo ended before printing a line matching %v:\n%s", re, d.out())
			}
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("no line matching %v within 60s:\n%s", re, d.out())
		}
	}
}

func (d *demoProcess) out() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.output.String()
}

// wait waits for the process and its output, and returns its exit code.
func (d *demoProcess) wait(t *testing.T, within time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		for range d.lines {
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return d.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		d.cmd.Process.Kill()
		<-done
		t.Fatalf("the demo did not exit within %v:\n%s", within, d.out())
		return -1
	}
}

// storeLeft fails the test if the demo left anything in its TMPDIR.
func (d *demoProcess) storeLeft(t *testing.T) {
	t.Helper()
	left, err := os.ReadDir(d.tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Fatalf("the demo left %s in its TMPDIR:\n%s", left[0].Name(), d.out())
	}
}

var (
	storedLine   = regexp.MustCompile(`stored ([1-9]\d*)$`)
	drainingLine = regexp.MustCompile(`draining`)
	dashLine     = regexp.MustCompile(`dash: live pipeline page at http://([\d.]+):(\d+)/`)
	drainedLine  = regexp.MustCompile(`drained: of the (\d+) events the pipeline had received, (\d+) were stored and acknowledged, (\d+) handed back to the server unprocessed \(it delivers them again\), (\d+) left unsettled`)
)

// SIGTERM in the middle of a run drains: the summary prints, everything
// the source took is settled, the temporary store is removed, exit 0. The
// page asked for with --dash :PORT listens on loopback only.
func TestSIGTERMMidRunDrainsPrintsTheSummaryAndRemovesTheStore(t *testing.T) {
	d := startDemo(t, "--duration", "60s", "--rate", "5000", "--lookup", "50ms", "--dash", ":0")
	dash := d.await(t, dashLine)
	if dash[1] != "127.0.0.1" {
		t.Errorf("--dash :0 printed the page at host %s; want 127.0.0.1", dash[1])
	}
	port, _ := strconv.Atoi(dash[2])
	if addrs := listeners(t, port); len(addrs) != 1 || addrs[0] != "127.0.0.1" {
		t.Errorf("--dash :0: the port is listened on at %v; want 127.0.0.1 only", addrs)
	}
	if resp, err := http.Get("http://127.0.0.1:" + dash[2] + "/snapshot.json"); err != nil {
		t.Errorf("the page's snapshot: %v", err)
	} else {
		resp.Body.Close()
	}
	d.await(t, storedLine) // mid-run: events are flowing
	d.cmd.Process.Signal(syscall.SIGTERM)
	if code := d.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM; want 0:\n%s", code, d.out())
	}
	out := d.out()
	m := drainedLine.FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "\nsluice demo: ") || !strings.Contains(out, " stage ") {
		t.Fatalf("no drain report and summary after SIGTERM:\n%s", out)
	}
	recv, acked, naked, unsettled := atoi(m[1]), atoi(m[2]), atoi(m[3]), atoi(m[4])
	if acked == 0 || unsettled != 0 || acked+naked != recv {
		t.Fatalf("of %d received, %d acknowledged, %d handed back, %d unsettled; want some acknowledged and none unsettled:\n%s",
			recv, acked, naked, unsettled, out)
	}
	t.Logf("drained: of %d received, %d acknowledged, %d handed back", recv, acked, naked)
	d.storeLeft(t)
}

// A second signal during the drain ends the process at once, and the
// temporary store is removed all the same.
func TestSecondSIGTERMExitsAtOnceAndRemovesTheStore(t *testing.T) {
	// A slow reference lookup keeps the drain going for a while.
	d := startDemo(t, "--duration", "60s", "--rate", "5000", "--lookup", "300ms")
	d.await(t, storedLine)
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.await(t, drainingLine) // the first is handled: the second is not merged with it
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	code := d.wait(t, 5*time.Second)
	if code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit %d after a second SIGTERM; want %d:\n%s", code, 128+int(syscall.SIGTERM), d.out())
	}
	if strings.Contains(d.out(), "\nsluice demo: ") {
		t.Fatalf("a summary after the second signal: it did not exit at once:\n%s", d.out())
	}
	t.Logf("exited %v after the second signal", time.Since(start).Round(time.Millisecond))
	d.storeLeft(t)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// listeners returns the local IPs of the TCP sockets listening on port,
// from /proc/net/tcp and tcp6.
func listeners(t *testing.T, port int) []string {
	t.Helper()
	var ips []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			if file == "/proc/net/tcp6" && errors.Is(err, os.ErrNotExist) {
				continue
			}
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			hexIP, hexPort, _ := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); err != nil || int(p) != port {
				continue
			}
			ips = append(ips, procIP(hexIP))
		}
	}
	return ips
}

// procIP decodes an address of /proc/net/tcp: 32-bit words in host
// (little-endian) order.
func procIP(h string) string {
	var b []byte
	for i := 0; i+8 <= len(h); i += 8 {
		w, _ := strconv.ParseUint(h[i:i+8], 16, 32)
		b = append(b, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	return net.IP(b).String()
}
