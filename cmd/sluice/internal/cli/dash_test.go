package cli

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

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dash"
)

var pageURLLine = regexp.MustCompile(`dash: live pipeline page at (http://\S+/)`)

func TestDashServesTheRunAndSendsOpenPagesTheFinalState(t *testing.T) {
	var errOut bytes.Buffer
	d, err := StartDash("127.0.0.1:0", &errOut)
	if err != nil {
		t.Fatal(err)
	}
	m := pageURLLine.FindStringSubmatch(errOut.String())
	if m == nil {
		d.Stop()
		t.Fatalf("got stderr %q, want the page's URL", errOut.String())
	}
	url := m[1]
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	// A page is open before the run starts; it must not keep the server
	// from stopping.
	resp, err := client.Get(url + "events")
	if err != nil {
		d.Stop()
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
	d.Show(p)
	if err := p.Wait(); err != nil || sum.Value() != 1000*328350 {
		d.Stop()
		t.Fatalf("got sum %d, err %v; want %d", sum.Value(), err, 1000*328350)
	}
	if err := d.Stop(); err != nil {
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
		{[]string{"-dash", ln.Addr().String()}, 1, "address already in use"},
	} {
		var out, errBuf bytes.Buffer
		code := Demo(c.args, &out, &errBuf, DemoCommand{})
		errOut := errBuf.String()
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

// A --dash address without a host listens on loopback only, and the page's
// printed URL is where it listens; a host, even a wildcard, is kept.
func TestDashOnAPortAloneListensOnLoopbackOnly(t *testing.T) {
	for _, c := range []struct {
		addr     string
		loopback bool   // the listener's IP
		urlHost  string // the printed URL's host
	}{
		{":0", true, "127.0.0.1"},
		{"127.0.0.1:0", true, "127.0.0.1"},
		{"0.0.0.0:0", false, "localhost"},
	} {
		var errOut bytes.Buffer
		d, err := StartDash(c.addr, &errOut)
		if err != nil {
			t.Fatalf("%s: %v", c.addr, err)
		}
		la := d.addr.(*net.TCPAddr)
		m := pageURLLine.FindStringSubmatch(errOut.String())
		if err := d.Stop(); err != nil {
			t.Fatalf("%s: stopping: %v", c.addr, err)
		}
		if la.IP.IsLoopback() != c.loopback || !c.loopback && !la.IP.IsUnspecified() {
			t.Errorf("%s: listens on %v; want loopback %v", c.addr, la, c.loopback)
		}
		want := "http://" + net.JoinHostPort(c.urlHost, strconv.Itoa(la.Port)) + "/"
		if m == nil || m[1] != want {
			t.Errorf("%s: printed %q; want the page at %s", c.addr, errOut.String(), want)
		}
	}
}

func TestDashAddressWithoutAPortIsRejected(t *testing.T) {
	for _, addr := range []string{"8080", "localhost", "", "127.0.0.1:"} {
		if got, err := DashAddr(addr); err == nil || !strings.Contains(err.Error(), "[HOST]:PORT") {
			t.Errorf("DashAddr(%q) = %q, %v; want an error asking for [HOST]:PORT", addr, got, err)
		}
		if addr == "" {
			continue // --dash "" is no page at all
		}
		var out, errBuf bytes.Buffer
		if code, errOut := Demo([]string{"--dash", addr}, &out, &errBuf, DemoCommand{}), errBuf.String(); code != 2 || !strings.Contains(errOut, "[HOST]:PORT") {
			t.Errorf("demo --dash %q: exit %d, stderr %q; want 2 and the expected form", addr, code, errOut)
		}
	}
}
