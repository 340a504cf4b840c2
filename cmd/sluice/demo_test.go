package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	natsx "github.com/sluicehq/sluice/connect/natsx"
	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

func TestDecodeAcceptsWellFormedEventsAndNormaliseFixesThem(t *testing.T) {
	ev, err := decode([]byte("42,aapl,187.23,100,1700000000000000000"))
	if err != nil {
		t.Fatal(err)
	}
	got := normalise(ev)
	want := tick{id: 42, symbol: "AAPL", price4: 1872300, size: 100, ts: 1700000000000000000, notional: 187230000}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestDecodeRejectsEveryKindOfMalformedEvent(t *testing.T) {
	for _, line := range []string{
		"#corrupt#", "1,AAPL,1.5", "1,AAPL,1.5,10,5,extra", ",AAPL,1.5,10,5",
		"1,,1.5,10,5", "1,TOOLONGSYM,1.5,10,5", "1,A$PL,1.5,10,5",
		"1,AAPL,-1.5,10,5", "1,AAPL,x,10,5", "1,AAPL,1.5,0,5", "1,AAPL,1.5,10,-5",
		"x1,AAPL,1.5,10,5", "1,AAPL,1.5.0,10,5", "1,AAPL,.,10,5", "1,AAPL,0.00001,10,5", "1,AAPL,1e9,10,5",
		"1,AAPL,NaN,10,5", "1,AAPL,1.5,10,99999999999999999999", "1,AAPL,1.5,+10,5",
	} {
		if ev, err := decode([]byte(line)); err == nil {
			t.Errorf("decode(%q) = %+v; want an error", line, ev)
		}
	}
}

// The price's fast path (up to 7 digits, a point, up to 4 decimals) and
// the general one (strconv.ParseFloat) agree: ten-thousandths, rounded
// half up.
func TestDecodeReadsPricesInTenThousandths(t *testing.T) {
	for _, c := range []struct {
		price string
		want  int64
	}{
		{"187.23", 1872300}, {"187.2300", 1872300}, {"10.5", 105000}, {"9", 90000}, {"9.", 90000},
		{"0.0001", 1}, {"9999999.9999", 99999999999}, {"1.23456", 12346}, {"1.23454", 12345},
		{"1e2", 1000000}, {".5", 5000}, {"+2.5", 25000},
	} {
		ev, err := decode([]byte("7,aapl," + c.price + ",3,1700000000000000000"))
		if err != nil || ev.price4 != c.want || ev.id != 7 || ev.size != 3 || ev.ts != 1700000000000000000 {
			t.Errorf("decode of price %q: %+v, %v; want price4 %d", c.price, ev, err, c.want)
		}
	}
	rng := rand.New(rand.NewPCG(2, 2))
	for i := range 10000 {
		line := genEvent(nil, rng, i, 1, 0)
		ev, err := decode(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		p, _ := strconv.ParseFloat(strings.Split(string(line), ",")[2], 64)
		if want := int64(p*1e4 + 0.5); ev.price4 != want {
			t.Fatalf("%q: price4 %d, want %d (as float)", line, ev.price4, want)
		}
	}
}

// Decoding a well-formed event of a known symbol allocates nothing.
func TestDecodeAllocatesNothing(t *testing.T) {
	line := []byte("123456,aapl,187.2300,100,1700000000000000000")
	if n := testing.AllocsPerRun(100, func() { _, _ = decode(line) }); n != 0 {
		t.Errorf("decode: %.1f allocations per event, want 0", n)
	}
}

func TestGeneratedEventsDecodeUnlessMadeMalformed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 1000 {
		line := genEvent(nil, rng, i, 1, 0)
		if _, err := decode(line); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
	}
	bad := 0
	for i := range 1000 {
		ev, err := decode(genEvent(nil, rng, i, 1, 1))
		if err != nil || ev.symbol == "ZZZZ" {
			bad++
		}
	}
	if bad != 1000 {
		t.Fatalf("%d of 1000 events made malformed are caught by decode or have no reference data", bad)
	}
}

func TestDemoStoresEveryEventOnceAndDeadLettersTheMalformed(t *testing.T) {
	srv, url, err := natsembed.Start(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer natsembed.Stop(srv)
	const n = 3000
	var out bytes.Buffer
	f := demoFlags{nats: url, events: n, malformed: 0.05, decoders: 2, storage: "file", inflight: 1000, quiet: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := demo(ctx, nil, f, &out, &out); err != nil {
		t.Fatalf("%v\n%s", err, &out)
	}
	if !strings.Contains(out.String(), "demo: 3000 events") {
		t.Fatalf("summary missing:\n%s", &out)
	}

	nc, err := natsx.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	good := readIDs(t, js, demoOut, ids, nil)
	reasons := map[string]int{}
	dead := readIDs(t, js, demoDead, ids, func(data []byte, reason string) {
		reasons[reason]++
		if want := whyDead(data); reason != want {
			t.Errorf("event %q dead-lettered for %q; want %q", data, reason, want)
		}
	})
	for i := range n {
		if c := ids["ev-"+strconv.Itoa(i)]; c != 1 {
			t.Fatalf("event %d is in the output %d times; want once (%d enriched, %d dead-lettered)", i, c, good, dead)
		}
	}
	if len(ids) != n || dead < n/40 || dead > n/10 {
		t.Fatalf("%d distinct IDs, %d enriched, %d dead-lettered of %d events with 5 %% malformed", len(ids), good, dead, n)
	}
	// The generator is deterministic: exactly the events it made
	// malformed are dead-lettered.
	rng, malformed := rand.New(rand.NewPCG(4, 4)), 0
	for i := range n {
		if whyDead(genEvent(nil, rng, i, 1, f.malformed)) != "" {
			malformed++
		}
	}
	if dead != malformed {
		t.Fatalf("%d events dead-lettered; the generator made %d malformed", dead, malformed)
	}
	// Both routes to the dead-letter subject were taken: decode's error
	// policy and enrich's lookup.
	if reasons["unknown symbol"] == 0 || reasons["unknown symbol"] == dead {
		t.Fatalf("dead letters by reason %v: want some from decode and some for an unknown symbol", reasons)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("%d dead-lettered", dead)) {
		t.Fatalf("the summary does not count the %d dead letters in the stream:\n%s", dead, &out)
	}
}

// whyDead is the reason the demo must give for dead-lettering an event:
// decode's error, or "unknown symbol"; "" for an event it must enrich.
func whyDead(data []byte) string {
	ev, err := decode(data)
	if err != nil {
		return err.Error()
	}
	if !slices.Contains(symbols, normalise(ev).symbol) {
		return "unknown symbol"
	}
	return ""
}

// readIDs counts the messages of stream by Nats-Msg-Id into ids and
// returns how many it read; each message's data and reason header go to
// check, if not nil.
func readIDs(t *testing.T, js jetstream.JetStream, stream string, ids map[string]int, check func(data []byte, reason string)) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	total := int(info.State.Msgs)
	for got := 0; got < total; {
		b, err := c.Fetch(min(1000, total-got), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		for m := range b.Messages() {
			ids[m.Headers().Get(jetstream.MsgIDHeader)]++
			if check != nil {
				check(m.Data(), m.Headers().Get(demoReason))
			}
			k++
		}
		if k == 0 {
			t.Fatalf("%s: read %d of %d messages, then nothing (%v)", stream, got, total, b.Error())
		}
		got += k
	}
	return total
}

func TestDemoCommandComparesWithTheBrokersCeiling(t *testing.T) {
	code, stdout, stderr := runCLI(t, "demo", "--events", "2000", "--compare", "--storage", "memory", "--lookup", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"embedded NATS server", "broker ceiling", "demo: 2000 events", "demo / ceiling:", "where the pipeline's time goes"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestDemoRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--events", "0"}, {"--malformed", "2"}, {"--malformed", "NaN"}, {"--inflight", "10"}, {"--decoders", "0"}, {"--storage", "tape"}, {"extra"},
	} {
		if code, _, _ := runCLI(t, append([]string{"demo"}, args...)...); code != 2 {
			t.Errorf("demo %v: exit %d; want 2", args, code)
		}
	}
}

func TestDemoReportsAnUnreachableServer(t *testing.T) {
	code, _, stderr := runCLI(t, "demo", "--nats", "nats://127.0.0.1:1", "--events", "10")
	if code != 1 || !strings.Contains(stderr, "natsx: connect to nats://127.0.0.1:1") {
		t.Fatalf("exit %d, stderr %q; want 1 and an error naming the server", code, stderr)
	}
}

// TestDemoClaimsItsPortAndProfileBeforeContactingAnything: a busy --dash
// port or an unwritable --cpuprofile is reported at once, before the demo
// connects to a server (here an unreachable one, which would fail
// otherwise), and for the Kafka demo before it contacts the brokers or
// generates events.
func TestDemoClaimsItsPortAndProfileBeforeContactingAnything(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	badProfile := filepath.Join(t.TempDir(), "no-such-dir", "cpu.prof")
	nats := []string{"demo", "--nats", "nats://127.0.0.1:1", "--events", "10"}
	kafka := []string{"demo", "--kafka", "127.0.0.1:1", "--clickhouse", "127.0.0.1:1", "--events", "10"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{slices.Concat(nats, []string{"--dash", busy.Addr().String()}), "--dash: listen tcp " + busy.Addr().String()},
		{slices.Concat(nats, []string{"--cpuprofile", badProfile}), "--cpuprofile: open " + badProfile},
		{slices.Concat(kafka, []string{"--dash", busy.Addr().String()}), "--dash: listen tcp " + busy.Addr().String()},
		{slices.Concat(kafka, []string{"--cpuprofile", badProfile}), "--cpuprofile: open " + badProfile},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", c.args, code, stderr, c.want)
		}
	}
}
