package market_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	natsx "github.com/sluicehq/sluice/connect/natsx"
	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

// Every generated event is in the output once: enriched, or dead-lettered
// with the reason Decode or the lookup gives; exactly the events the
// generator made malformed are dead letters, and the result counts them.
func TestRunNATSStoresEveryEventOnceAndDeadLettersTheMalformed(t *testing.T) {
	srv, url, err := natsembed.Start(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer natsembed.Stop(srv)
	const n = 3000
	cfg := market.NATSConfig{Events: n, Malformed: 0.05, Decoders: 2, MaxInFlight: 1000, Storage: jetstream.FileStorage}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := market.RunNATS(ctx, context.Background(), url, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Generated != n || res.Stored+res.Dead != n || res.Drained != nil {
		t.Fatalf("result: generated %d, stored %d, dead %d, drained %v; want %d generated and settled", res.Generated, res.Stored, res.Dead, res.Drained, n)
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
	good := readIDs(t, js, market.NATSOut, ids, nil)
	reasons := map[string]int{}
	dead := readIDs(t, js, market.NATSDead, ids, func(data []byte, reason string) {
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
		if whyDead(market.Generate(nil, rng, i, 1, cfg.Malformed)) != "" {
			malformed++
		}
	}
	if dead != malformed || int64(dead) != res.Dead {
		t.Fatalf("%d events dead-lettered, the result says %d; the generator made %d malformed", dead, res.Dead, malformed)
	}
	// Both routes to the dead-letter subject were taken: decode's error
	// policy and enrich's lookup.
	if reasons["unknown symbol"] == 0 || reasons["unknown symbol"] == dead {
		t.Fatalf("dead letters by reason %v: want some from decode and some for an unknown symbol", reasons)
	}
}

// whyDead is the reason the pipeline must give for dead-lettering an
// event: Decode's error, or "unknown symbol"; "" for an event it must
// enrich.
func whyDead(data []byte) string {
	ev, err := market.Decode(data)
	if err != nil {
		return err.Error()
	}
	if !market.Known(market.Normalise(ev).Symbol) {
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
				check(m.Data(), m.Headers().Get(market.ReasonHeader))
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
