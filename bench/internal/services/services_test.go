package services

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestBuildLeavesTheProgramsInItsDirectory(t *testing.T) {
	dir, err := Build(context.Background(), "services-test-", "github.com/sluicehq/sluice/bench/cmd/squares")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if fi, err := os.Stat(filepath.Join(dir, "squares")); err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("no executable squares in %s: %v", dir, err)
	}
}

func TestAFailedBuildSaysWhyAndLeavesNothing(t *testing.T) {
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "services-test-bad-*"))
	_, err := Build(context.Background(), "services-test-bad-", "github.com/sluicehq/sluice/bench/no/such/program")
	if err == nil || !strings.Contains(err.Error(), "go build github.com/sluicehq/sluice/bench/no/such/program") {
		t.Fatalf("got %v; want an error naming the package", err)
	}
	if after, _ := filepath.Glob(filepath.Join(os.TempDir(), "services-test-bad-*")); len(after) != len(before) {
		t.Fatalf("temporary directories before %v, after %v; want none left", before, after)
	}
}

func TestProcessAwaitsLinesInOrderAndReportsTheExitCode(t *testing.T) {
	p, err := Start("/bin/sh", []string{"SERVICES_TEST=7"}, "-c", `echo one; echo "two $SERVICES_TEST" >&2; echo three 3; exit 3`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if m, err := p.Await(regexp.MustCompile(`^two (\d)$`), 10*time.Second); err != nil || m[1] != "7" {
		t.Fatalf("got %q, %v; want the line of stderr with the environment's 7", m, err)
	}
	if m, err := p.Await(regexp.MustCompile(`^(one|three) (\d)$`), 10*time.Second); err != nil || m[1] != "three" {
		t.Fatalf("got %q, %v; want the line after the last one found", m, err)
	}
	if _, err := p.Await(regexp.MustCompile(`one`), 10*time.Second); err == nil || !strings.Contains(err.Error(), "ended") {
		t.Fatalf("got %v; want the output's end reported (one was already passed)", err)
	}
	if code, err := p.Wait(10 * time.Second); code != 3 || err != nil {
		t.Fatalf("exit %d, %v; want 3", code, err)
	}
	if out := p.Output(); out != "one\ntwo 7\nthree 3\n" {
		t.Fatalf("output %q", out)
	}
}

func TestProcessAwaitAndWaitGiveUpInTime(t *testing.T) {
	p, err := Start("/bin/sh", nil, "-c", "echo started; exec sleep 60")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if _, err := p.Await(regexp.MustCompile(`never`), 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "within") {
		t.Fatalf("got %v; want a timeout", err)
	}
	if _, err := p.Wait(200 * time.Millisecond); err == nil {
		t.Fatal("Wait of a sleeping process returned no error")
	}
	if p.Cmd.ProcessState == nil || p.Cmd.ProcessState.Success() {
		t.Fatalf("the process was not killed: %v", p.Cmd.ProcessState)
	}
}

func TestServersNotStartedStopDoingNothing(t *testing.T) {
	var s Servers
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestRepoRootHoldsTheScripts(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "scripts", "services")); err != nil {
		t.Fatal(err)
	}
}
