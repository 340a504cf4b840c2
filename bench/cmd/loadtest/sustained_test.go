package main

import (
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestHeldVerdict(t *testing.T) {
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	steady := []lagSample{{sec(1), 200}, {sec(2), 300}, {sec(3), 250}, {sec(4), 280}, {sec(4.02), 150}}
	for _, c := range []struct {
		name     string
		rate     int
		window   time.Duration
		produced int64
		samples  []lagSample
		held     bool
		why      string
	}{
		{"bounded lag", 1000, sec(4.02), 4020, steady, true, "lag at the end 150"},
		{"lag at the end above one second of events", 1000, sec(4), 4000,
			[]lagSample{{sec(1), 500}, {sec(2), 900}, {sec(3), 1000}, {sec(4), 1001}}, false, "more than one second of events"},
		{"lag growing over the last half", 1000, sec(4), 4000,
			[]lagSample{{sec(1), 50}, {sec(2), 100}, {sec(3), 400}, {sec(4), 700}}, false, "lag grew"},
		{"growth within half a second of events", 1000, sec(4), 4000,
			[]lagSample{{sec(1), 50}, {sec(2), 100}, {sec(3), 400}, {sec(4), 600}}, true, ""},
		{"a drain is not a rate: the generator fell short", 1000, sec(4), 3000, steady, false, "fell short"},
		{"one sample", 1000, sec(1), 1000, []lagSample{{sec(1), 0}}, false, "too short"},
		{"no window", 1000, 0, 0, nil, false, "too short"},
	} {
		t.Run(c.name, func(t *testing.T) {
			held, why := heldVerdict(c.rate, c.window, c.produced, c.samples)
			if held != c.held || !strings.Contains(why, c.why) {
				t.Errorf("held %v (%s); want %v, saying %q", held, why, c.held, c.why)
			}
		})
	}
}

func TestGenDue(t *testing.T) {
	for _, c := range []struct {
		rate           int
		elapsed, total time.Duration
		want           int64
	}{
		{1000, 0, 5 * time.Second, 0},
		{1000, 500 * time.Millisecond, 5 * time.Second, 500},
		{1000, 7 * time.Second, 5 * time.Second, 5000},
		{1000, -time.Second, 5 * time.Second, 0},
		{180_000, 5 * time.Millisecond, time.Minute, 900},
	} {
		if got := due(c.rate, c.elapsed, c.total); got != c.want {
			t.Errorf("due(%d, %s, %s) = %d, want %d", c.rate, c.elapsed, c.total, got, c.want)
		}
	}
}

// listener accepts connections on loopback and counts them: the address
// of a broker and a server that must not be contacted.
func listener(t *testing.T) (addr string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().String(), accepted
}

// Bad --rate and --duration exit 2 with a message naming the flag, and
// contact neither the broker nor the server.
func TestSustainedBadFlagsExit2BeforeContactingAnything(t *testing.T) {
	addr, accepted := listener(t)
	kc := []string{"--kafka", addr, "--clickhouse", addr}
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"kafka", "--rate", "-5", "--duration", "5s"}, "--rate"},
		{[]string{"kafka", "--rate", "100000000", "--duration", "5s"}, "--rate"},
		{[]string{"kafka", "--duration", "5s"}, "--rate"},
		{[]string{"kafka", "--rate", "1000"}, "--duration"},
		{[]string{"kafka", "--rate", "1000", "--duration", "1s"}, "--duration"},
		{[]string{"kafka", "--rate", "1000", "--duration", "48h"}, "--duration"},
		{[]string{"kafka", "--rate", "1000", "--duration", "-3s"}, "--duration"},
		{[]string{"kafka", "--rate", "1000", "--duration", "5s", "--warmup", "-1s"}, "--warmup"},
		{[]string{"kafka", "--rate", "1000", "--duration", "5s", "--warmup", "11m"}, "--warmup"},
		{[]string{"kafka", "--rate", "1000", "--duration", "24h", "--warmup", "1m"}, "--warmup"},
		{[]string{"kafka", "--warmup", "5s"}, "--warmup"},
		{[]string{"gen", "--rate", "1000", "--duration", "5s"}, "--topic"},
		{[]string{"gen", "--topic", "t", "--duration", "5s"}, "--rate"},
		{[]string{"gen", "--topic", "t", "--rate", "-1", "--duration", "5s"}, "--rate"},
		{[]string{"gen", "--topic", "t", "--rate", "20000000", "--duration", "5s"}, "--rate"},
		{[]string{"gen", "--topic", "t", "--rate", "1000"}, "--duration"},
		{[]string{"gen", "--topic", "t", "--rate", "1000", "--duration", "48h"}, "--duration"},
		{[]string{"gen", "--topic", "t", "--rate", "1000", "--duration", "5s", "--malformed", "2"}, "--malformed"},
		{[]string{"gen", "--topic", "t", "--rate", "1000", "--duration", "5s", "extra"}, "unexpected"},
	} {
		args := c.args
		if args[0] == "kafka" {
			args = append(append([]string{"kafka"}, kc...), args[1:]...)
		} else {
			args = append([]string{"gen", "--kafka", addr}, args[1:]...)
		}
		code, _, errOut := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, c.flag) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message naming %s", args, code, errOut, c.flag)
		}
	}
	time.Sleep(100 * time.Millisecond)
	if n := accepted.Load(); n > 0 {
		t.Errorf("bad flags: %d connections to the broker/server; want none", n)
	}
}

var (
	sustainedLine = regexp.MustCompile(`^\s+\d+\.\ds\s+in\s+\S+/s\s+stored\s+\S+/s\s+lag\s+-?\d+\s+consume→CH p50 \S+\s+p90 \S+\s+p99 \S+\s+max \S+\s+produced→CH p50 \S+\s+p90 \S+\s+p99 \S+\s+max \S+\s+dead \d+$`)
	warmupLine    = regexp.MustCompile(`^\s+\d+\.\ds warmup in\s+\S+/s\s+stored`)
	genLine       = regexp.MustCompile(`^gen: produced (\d+) events in `)
	windowLat     = regexp.MustCompile(`^latency in the window, (consume|produced) → row committed in ClickHouse: p50 \S+  p90 \S+  p99 \S+  max \S+$`)
	verdictLine   = regexp.MustCompile(`^(HELD|NOT HELD): `)
	windowCPU     = regexp.MustCompile(`^CPU in the window: this process ([0-9.]+) µs per event in \(\d+ ms a second;`)
	// the bars' broker baseline of a sustained window
	brokerLine = regexp.MustCompile(`the broker alone, in the same window \(a plain consumer of sustained-market .*\): produced → polled p50 ([0-9.]+)ms`)
)

// A short sustained run on the real broker and server: a line a second
// while the generator runs, the window's percentiles, a verdict, and every
// event produced stored once or dead-lettered (rows = produced − dead,
// and the bars' flush); the bars reported and equal to a plain loop's.
func TestKafkaSustainedRunReportsEachSecondAndStoresEveryEvent(t *testing.T) {
	s := needServices(t)
	const rate, window = 2000, 4
	d := startDemo(t, "--kafka", s.kafka, "--clickhouse", s.clickhouse, "--name", "sustained",
		"--rate", strconv.Itoa(rate), "--duration", strconv.Itoa(window)+"s", "--warmup", "2s")
	if code := d.wait(90 * time.Second); code != 0 {
		t.Fatalf("exit %d:\n%s", code, d.Output())
	}
	out := d.Output()
	t.Log(out)
	var perSecond, lat, verdicts, warm, warmOver, cpu int
	var produced int64 = -1
	for line := range strings.Lines(out) {
		line = strings.TrimRight(line, "\n")
		switch {
		case sustainedLine.MatchString(line):
			perSecond++
		case windowLat.MatchString(line):
			lat++
		case verdictLine.MatchString(line):
			verdicts++
		case windowCPU.MatchString(line):
			if v, _ := strconv.ParseFloat(windowCPU.FindStringSubmatch(line)[1], 64); v > 0 {
				cpu++
			}
		case warmupLine.MatchString(line):
			warm++
		case strings.Contains(line, "warm-up over (2s at the rate, counted in no figure)"):
			warmOver++
		}
		if m := genLine.FindStringSubmatch(line); m != nil {
			produced, _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	if perSecond < window-1 {
		t.Errorf("%d per-second lines, want at least %d", perSecond, window-1)
	}
	if warm < 1 || warmOver != 1 || !strings.Contains(out, "warm-up: the first 2s at the rate") {
		t.Errorf("%d warm-up lines, %d lines saying it is over; want at least 1 and 1, and the summary naming the warm-up", warm, warmOver)
	}
	if lat != 2 || verdicts != 1 || cpu != 1 {
		t.Errorf("%d window latency lines, %d verdicts and %d lines of the window's CPU per event (> 0), want 2, 1 and 1", lat, verdicts, cpu)
	}
	if produced < rate*window*95/100 {
		t.Fatalf("the generator produced %d events, want about %d", produced, rate*window)
	}
	if m := brokerLine.FindStringSubmatch(out); m == nil || m[1] == "0.00" {
		t.Errorf("no broker baseline with a figure above 0 (%q)", brokerLine.String())
	}
	if bars := checkBarsOutput(t, out); bars < window {
		t.Errorf("%d bars checked, want at least one per second of the window", bars)
	}
	names := onkafka.NamesFor("sustained")
	good, dead := expected(t, s.kafka, names.In)
	flush := flushIn(good)
	if int64(len(good)+len(dead)) != produced+onkafka.FlushEvents || flush != onkafka.FlushEvents || len(dead) == 0 {
		t.Fatalf("input topic: %d valid and %d bad events (%d valid of the bars' flush), want %d in all with some bad, and the flush", len(good), len(dead), flush, produced)
	}
	if rows := checkStored(t, s, names, good, dead); rows != int64(len(good)) {
		t.Errorf("ClickHouse: %d rows, want the %d valid events (the flush's among them)", rows, len(good))
	}
}

// The generator child dies with the demo: SIGKILL the demo mid-window and
// the `loadtest gen` it started is gone soon after.
func TestKafkaSustainedGeneratorDiesWithTheDemo(t *testing.T) {
	s := needServices(t)
	d := startDemo(t, "--kafka", s.kafka, "--clickhouse", s.clickhouse, "--name", "orphan",
		"--rate", "500", "--duration", "60s")
	d.await(sustainedLine)
	pid := genPID(t, onkafka.NamesFor("orphan").In)
	if pid == 0 {
		t.Fatalf("no `loadtest gen` child producing to %s:\n%s", onkafka.NamesFor("orphan").In, d.Output())
	}
	if err := d.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	d.wait(10 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the generator (pid %d) outlived the demo by 10s", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// genPID returns the pid of the `loadtest gen` process producing to topic,
// or 0.
func genPID(t *testing.T, topic string) int {
	t.Helper()
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range cmdlines {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 3 && args[1] == "gen" && strings.Contains(string(b), "\x00--topic\x00"+topic+"\x00") {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	return 0
}

// The window opens when the warm-up ends: what was produced and stored
// before counts in no figure, and a window that never opened stays empty.
func TestSustainedWindowCountsFromTheEndOfTheWarmUp(t *testing.T) {
	t0 := time.Now()
	s := &sustainedRun{f: kafkaFlags{pipeFlags: pipeFlags{rate: 1000, duration: 4 * time.Second}, warmup: 2 * time.Second}}
	s.sample(t0, 500) // still warming up: no sample
	s.closeWindow(t0.Add(time.Second), 1000, 900, 900)
	if s.window != 0 || len(s.samples) != 0 {
		t.Fatalf("closed before it opened: window %s, %d samples; want none", s.window, len(s.samples))
	}
	if st := stepOf(s); st.pass || st.held {
		t.Errorf("an unopened window passed: %+v", st)
	}
	s.wstart, s.in0, s.stored0 = t0, 2000, 1900 // as openWindow sets them
	for i := 1; i <= 4; i++ {
		s.sample(t0.Add(time.Duration(i)*time.Second), 50)
	}
	s.closeWindow(t0.Add(4*time.Second), 6000, 5880, 5950)
	if s.window != 4*time.Second || s.produced != 4000 || s.storedWin != 3980 {
		t.Errorf("window %s, produced %d, stored %d; want 4s, 4000 (6000 − 2000 at the opening), 3980", s.window, s.produced, s.storedWin)
	}
	if n := len(s.samples); n != 5 || s.samples[n-1].lag != 50 || s.samples[0].at != time.Second {
		t.Errorf("samples %v; want 5, from 1s after the opening, the last with lag 50", s.samples)
	}
	if held, why := heldVerdict(s.f.rate, s.window, s.produced, s.samples); !held {
		t.Errorf("not held: %s", why)
	}
}
