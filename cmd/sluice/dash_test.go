package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/dash"
)

var pageURLLine = regexp.MustCompile(`dash: live pipeline page at (http://\S+/)`)

func TestDashServesTheRunAndSendsOpenPagesTheFinalState(t *testing.T) {
	var errOut bytes.Buffer
	d, err := startDash("127.0.0.1:0", &errOut)
	if err != nil {
		t.Fatal(err)
	}
	m := pageURLLine.FindStringSubmatch(errOut.String())
	if m == nil {
		d.stop()
		t.Fatalf("got stderr %q, want the page's URL", errOut.String())
	}
	url := m[1]
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	// A page is open before the run starts; it must not keep the server
	// from stopping.
	resp, err := client.Get(url + "events")
	if err != nil {
		d.stop()
		t.Fatal(err)
	}
	defer resp.Body.Close()

	nums := numbers(1024)
	got, err := squaresSluice(context.Background(), 100_000, 3, nums, d.show)
	if err != nil || got != expectedSum(nums, 100_000) {
		d.stop()
		t.Fatalf("got sum %d, err %v; want %d", got, err, expectedSum(nums, 100_000))
	}
	if err := d.stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	// The stream ends with a view of the finished run.
	var last string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			last = data
		}
	}
	var v dash.View
	if err := json.Unmarshal([]byte(last), &v); err != nil {
		t.Fatalf("got last event %q: %v", last, err)
	}
	if len(v.Pipelines) != 1 || !v.Pipelines[0].Done || v.Pipelines[0].Stages[2].In != 100_000 {
		t.Fatalf("got final view %+v, want the done squares run with 100000 items summed", v.Pipelines)
	}
}

func TestSquaresWithDashStillPrintsTheSumAndTheURL(t *testing.T) {
	code, out, errOut := runCLI(t, "squares", "-impl", "sluice", "-n", "50000", "-dash", "127.0.0.1:0")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if want := "Final Sum: " + strconv.Itoa(expectedSum(numbers(1024), 50000)); !strings.Contains(out, want) {
		t.Fatalf("got %q, want %q", out, want)
	}
	if !pageURLLine.MatchString(errOut) {
		t.Fatalf("got stderr %q, want the page's URL", errOut)
	}
}

func TestDashFlagIsRejectedWhereItCannotWork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"squares", "-impl", "naive", "-dash", "127.0.0.1:0"}, 2, "naive"},
		{[]string{"squares", "-n", "10", "-dash", "127.0.0.1:0"}, 2, "fixed port"},
		{[]string{"squares", "-impl", "sluice", "-n", "10", "-dash", ln.Addr().String()}, 1, "address already in use"},
	} {
		code, _, errOut := runCLI(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Fatalf("%v: got exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}

func TestPageURLNamesAHostABrowserCanOpen(t *testing.T) {
	for addr, want := range map[string]string{
		"[::]:8080":      "http://localhost:8080/",
		"0.0.0.0:8080":   "http://localhost:8080/",
		"127.0.0.1:9000": "http://127.0.0.1:9000/",
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := pageURL(a); got != want {
			t.Fatalf("%s: got %s, want %s", addr, got, want)
		}
	}
	if line, err := compareDash(":8080"); err != nil || !strings.Contains(line, "http://localhost:8080/") {
		t.Fatalf("got %q, %v; want the localhost URL", line, err)
	}
}

func TestCompareModeWithDashRunsBothAndSaysWhereThePageIs(t *testing.T) {
	t.Setenv("SLUICE_CLI_CHILD", "1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String() // free again once closed: each sluice child listens on it in turn
	ln.Close()
	code, out, errOut := runCLI(t, "squares", "-n", "100000", "-count", "2", "-dash", addr)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if want := "dash: each sluice run serves the live pipeline page at http://" + addr + "/"; !strings.Contains(out, want) {
		t.Fatalf("got %q, want %q", out, want)
	}
}
