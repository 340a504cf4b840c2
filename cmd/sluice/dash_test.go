package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
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

	p := sluice.New(context.Background(), sluice.Named("squares"))
	src := sluice.FromSeq(p, "generate", func(yield func(int) bool) {
		for i := range 100_000 {
			if !yield(i % 100) {
				return
			}
		}
	})
	sq := sluice.Map(p, "square", src, 3, func(_ context.Context, v int) (int, error) { return v * v, nil })
	sum := sluice.Reduce(p, "sum", sq, 0, func(acc, v int) int { return acc + v })
	d.show(p)
	if err := p.Wait(); err != nil || sum.Value() != 1000*328350 {
		d.stop()
		t.Fatalf("got sum %d, err %v; want %d", sum.Value(), err, 1000*328350)
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
		{[]string{"demo", "-dash", ln.Addr().String()}, 1, "address already in use"},
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
}
