package kafkax_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/kafkax"
)

func headerOf(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func TestPoisonRecordIsDeadLetteredAndEveryNeighbourStored(t *testing.T) {
	in, out, dlq := newTopic(t, 2), newTopic(t, 2), newTopic(t, 1)
	const n = 5000
	const poison = "1234"
	produceN(t, in, n)
	sink := newSink(t, kafkax.ToTopic(out))
	src := newSource(t, "poison", []string{in}, kafkax.StopWhenCaughtUp(),
		kafkax.Redeliver(3, 10*time.Millisecond), kafkax.DeadLetterTo(sink, dlq))

	var tries atomic.Int64
	p := sluice.New(ctxT(t, time.Minute))
	msgs := kafkax.Read(p, "read", src)
	// A stage whose error is about one record settles it with Fail
	// rather than failing the run.
	outs := sluice.FlatMap(p, "decode", msgs, 4, func(_ context.Context, m kafkax.Msg, emit func(kafkax.Out) bool) error {
		if string(m.Value()) == poison {
			tries.Add(1)
			m.Fail(errors.New("cannot decode " + poison))
			return nil
		}
		emit(copyOut(m))
		return nil
	})
	kafkax.Produce(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if got := tries.Load(); got != 3 {
		t.Errorf("the poison record was processed %d times; want 3 (Attempts)", got)
	}
	ids, _ := readAll(t, out)
	ids[poison] = 1 // the one record not in the output
	checkEvery(t, ids, n)
	dead, recs := readAll(t, dlq)
	if len(recs) != 1 || dead[poison] != 1 {
		t.Fatalf("dead-letter topic holds %v; want the poison record once", dead)
	}
	r := recs[0]
	if got := headerOf(r, kafkax.HeaderError); !strings.Contains(got, "cannot decode") {
		t.Errorf("error header %q", got)
	}
	if headerOf(r, kafkax.HeaderTopic) != in || headerOf(r, kafkax.HeaderAttempts) != "3" {
		t.Errorf("headers %v", r.Headers)
	}
	if _, err := strconv.Atoi(headerOf(r, kafkax.HeaderOffset)); err != nil {
		t.Errorf("offset header: %v", err)
	}
	if l := lag(t, "poison", in); l != 0 {
		t.Fatalf("group lag after the run: %d; want 0 (the dead-lettered record is settled)", l)
	}
	if st := src.Stats(); st.Parked != 1 || st.Failed != 3 {
		t.Fatalf("stats %+v; want 1 parked, 3 failures", st)
	}
}

func TestFailWithoutDeadLetterFailsTheRunAndCommitsNothingPastIt(t *testing.T) {
	in := newTopic(t, 1)
	produceN(t, in, 100)
	src := newSource(t, "nodlq", []string{in}, kafkax.Redeliver(2, 0))
	p := sluice.New(ctxT(t, time.Minute))
	var mu sync.Mutex
	acked := make([]bool, 100) // by value, which is the offset
	sluice.ForEach(p, "work", kafkax.Read(p, "read", src), 2, func(_ context.Context, m kafkax.Msg) error {
		if string(m.Value()) == "50" {
			m.Fail(errors.New("boom"))
		} else {
			i, _ := strconv.Atoi(string(m.Value()))
			mu.Lock()
			acked[i] = true
			mu.Unlock()
			m.Ack()
		}
		return nil
	})
	err := p.Wait()
	if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), in+"/0/50") {
		t.Fatalf("Wait: %v; want the failure naming the record", err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	// The commit covers the settled prefix and stops at the failed record:
	// 50, unless the failure ended the run before records ahead of it
	// were processed (on a loaded machine the redeliveries can outrun
	// them), then at the first of those.
	prefix := 0
	for prefix < 50 && acked[prefix] {
		prefix++
	}
	if l := lag(t, "nodlq", in); l != int64(100-prefix) {
		t.Fatalf("lag %d; want %d: the commit covers the %d records acknowledged in a row and stops there, at the failed record at the latest", l, 100-prefix, prefix)
	}
}

func TestSlowSinkPausesFetchingAndBoundsWhatIsHeld(t *testing.T) {
	in, out := newTopic(t, 4), newTopic(t, 4)
	const n, bound = 20000, 500
	produceN(t, in, n)
	sink := newSink(t, kafkax.ToTopic(out), kafkax.SinkWorkers(1))
	src := newSource(t, "slow", []string{in}, kafkax.StopWhenCaughtUp(), kafkax.MaxInFlight(bound))

	var most atomic.Int64
	p := sluice.New(ctxT(t, 2*time.Minute))
	msgs := kafkax.Read(p, "read", src)
	outs := sluice.Map(p, "slow", msgs, 1, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		if f := src.Stats().InFlight; f > most.Load() {
			most.Store(f)
		}
		if m.Offset()%100 == 0 {
			time.Sleep(2 * time.Millisecond)
		}
		return copyOut(m), nil
	})
	kafkax.Produce(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	st := src.Stats()
	if most.Load() > bound {
		t.Fatalf("%d records in flight at once; bound %d", most.Load(), bound)
	}
	if st.Pauses < 5 {
		t.Fatalf("fetching paused %d times; want it paused and resumed again and again", st.Pauses)
	}
	ids, _ := readAll(t, out)
	checkEvery(t, ids, n)
	t.Logf("most in flight %d (bound %d); source %+v", most.Load(), bound, st)
}

func TestNewSourceAndSinkReportBadConfiguration(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	if _, err := kafkax.NewSource(ctx, broker, "g", []string{"no-such-topic"}); err == nil || !strings.Contains(err.Error(), "no-such-topic") {
		t.Errorf("missing topic: %v", err)
	}
	if _, err := kafkax.NewSink(ctx, broker, kafkax.ToTopic("no-such-topic")); err == nil || !strings.Contains(err.Error(), "no-such-topic") {
		t.Errorf("missing topic: %v", err)
	}
	if _, err := kafkax.NewSource(ctx, "", "g", []string{"t"}); err == nil {
		t.Error("no brokers: no error")
	}
	bctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := kafkax.NewSink(bctx, "127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("unreachable broker: %v", err)
	}
}
