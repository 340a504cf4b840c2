package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// cliBinary builds the command once for the tests that run it from
// outside; the binary is removed by TestMain's cleanup of its directory.
var cliBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "sluice-loadtest-test-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "loadtest")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

var binDir string // removed after the tests

// demoProcess is `loadtest kafka` running as a child process with TMPDIR set
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
	if runtime.GOOS != "linux" {
		t.Skip("signals and /proc/net/tcp are checked on Linux")
	}
	bin, err := cliBinary()
	if err != nil {
		t.Fatal(err)
	}
	d := &demoProcess{tmp: t.TempDir(), lines: make(chan string, 1024)}
	d.cmd = exec.Command(bin, append([]string{"kafka"}, args...)...)
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

var storedLine = regexp.MustCompile(`stored ([1-9]\d*)$`)
