package kafkax_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// traceKey is where fakePropagator keeps a trace context's traceparent.
type traceKey struct{}

// fakePropagator carries the traceparent header as a context value: the
// contract of sluice.Propagator without OpenTelemetry.
type fakePropagator struct{}

func (fakePropagator) Extract(ctx context.Context, h sluice.Headers) context.Context {
	if v := h.Get("traceparent"); v != "" {
		return context.WithValue(ctx, traceKey{}, v)
	}
	return ctx
}

func (fakePropagator) Inject(ctx context.Context, h sluice.Headers) {
	if v, ok := ctx.Value(traceKey{}).(string); ok {
		h.Set("traceparent", v)
	}
}

func traceparent(i int) string { return fmt.Sprintf("00-%032x-%016x-01", i+1, i+1) }

// A record's traceparent header becomes its receipt's trace context, and
// the record produced from it carries the same header; a record without
// one gets none, and the Out's own headers are kept, unmodified.
func TestPropagateCarriesEachRecordsTraceToTheRecordProducedFromIt(t *testing.T) {
	in, out := newTopic(t, 2), newTopic(t, 2)
	const n = 200
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		id := []byte(strconv.Itoa(i))
		r := &kgo.Record{Topic: in, Key: id, Value: id}
		if i%2 == 0 { // every other record is traced
			r.Headers = []kgo.RecordHeader{{Key: "traceparent", Value: []byte(traceparent(i))}}
		}
		if err := cl.ProduceSync(ctxT(t, 10*time.Second), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	prop := kafkax.Propagate(fakePropagator{})
	src := newSource(t, "propagate", []string{in}, kafkax.StopWhenCaughtUp(), prop)
	sink := newSink(t, kafkax.ToTopic(out), prop)

	shared := []kgo.RecordHeader{{Key: "origin", Value: []byte("test")}}
	var traced atomic.Int64
	p := sluice.New(ctxT(t, time.Minute))
	outs := sluice.Map(p, "copy", kafkax.Read(p, "read", src), 2, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		i, _ := strconv.Atoi(string(m.Value()))
		tc := m.Trace()
		if (tc != nil) != (i%2 == 0) || (tc != nil && tc.Value(traceKey{}) != traceparent(i)) {
			return kafkax.Out{}, fmt.Errorf("record %d: got trace context %v, want traceparent %v", i, tc, i%2 == 0)
		}
		if tc != nil {
			traced.Add(1)
		}
		o := copyOut(m)
		o.Headers = shared[:1:1]
		return o, nil
	})
	kafkax.Produce(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if traced.Load() != n/2 {
		t.Fatalf("got %d receipts with a trace, want %d", traced.Load(), n/2)
	}
	if len(shared) != 1 || string(shared[0].Value) != "test" {
		t.Fatalf("the Out's headers were modified: %v", shared)
	}
	_, recs := readAll(t, out)
	if len(recs) != n {
		t.Fatalf("got %d records downstream, want %d", len(recs), n)
	}
	for _, r := range recs {
		i, _ := strconv.Atoi(string(r.Value))
		want := ""
		if i%2 == 0 {
			want = traceparent(i)
		}
		if got := headerOf(r, "traceparent"); got != want || headerOf(r, "origin") != "test" {
			t.Fatalf("record %d downstream: got headers %v, want traceparent %q and origin test", i, r.Headers, want)
		}
	}
}

// Without Propagate, a traceparent header is left alone: no trace in the
// receipt, and the header goes downstream only if the Out carries it.
func TestWithoutPropagateReceiptsHaveNoTrace(t *testing.T) {
	in := newTopic(t, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	r := &kgo.Record{Topic: in, Value: []byte("0"), Headers: []kgo.RecordHeader{{Key: "traceparent", Value: []byte(traceparent(0))}}}
	if err := cl.ProduceSync(ctxT(t, 10*time.Second), r).FirstErr(); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, "nopropagate", []string{in}, kafkax.StopWhenCaughtUp())
	p := sluice.New(ctxT(t, time.Minute))
	got := sluice.Collect(p, "collect", sluice.Map(p, "trace", kafkax.Read(p, "read", src), 1,
		func(_ context.Context, m kafkax.Msg) (bool, error) {
			m.Ack()
			return m.Trace() != nil, nil
		}))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if v := got.Value(); len(v) != 1 || v[0] {
		t.Fatalf("got traces %v, want one record without", v)
	}
}

// recorder is a slog.Handler that keeps every record as text.
type recorder struct {
	mu    *sync.Mutex
	lines *[]string
	attrs []slog.Attr
}

func newRecorder() recorder { return recorder{mu: new(sync.Mutex), lines: new([]string)} }

func (r recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r recorder) Handle(_ context.Context, rec slog.Record) error {
	var sb strings.Builder
	sb.WriteString(rec.Level.String() + " " + rec.Message)
	add := func(a slog.Attr) bool { fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value); return true }
	for _, a := range r.attrs {
		add(a)
	}
	rec.Attrs(add)
	r.mu.Lock()
	*r.lines = append(*r.lines, sb.String())
	r.mu.Unlock()
	return nil
}

func (r recorder) WithAttrs(as []slog.Attr) slog.Handler {
	r.attrs = append(slices.Clip(r.attrs), as...)
	return r
}

func (r recorder) WithGroup(string) slog.Handler { return r }

func (r recorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(*r.lines)
}

func (r recorder) count(prefix string) int {
	n := 0
	for _, l := range r.all() {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// The source logs the group joined and the partitions assigned; 1000
// records failing every delivery are logged as counts of redeliveries
// and dead letters, a few lines, never one per record.
func TestLoggerLogsTheGroupAndCountsFailuresInAFewLines(t *testing.T) {
	in, dlq := newTopic(t, 2), newTopic(t, 1)
	const n = 1000
	produceN(t, in, n)
	rec := newRecorder()
	log := kafkax.Logger(slog.New(rec))
	sink := newSink(t, log)
	src := newSource(t, "logged", []string{in}, kafkax.StopWhenCaughtUp(), log,
		kafkax.Redeliver(2, 0), kafkax.DeadLetterTo(sink, dlq))

	p := sluice.New(ctxT(t, time.Minute))
	sluice.ForEach(p, "reject", kafkax.Read(p, "read", src), 2, func(_ context.Context, m kafkax.Msg) error {
		m.Fail(errors.New("rejected"))
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	sink.Close()
	lines := rec.all()
	all := strings.Join(lines, "\n")
	count := func(msg string) (n int, total int64) {
		for _, l := range lines {
			if !strings.HasPrefix(l, msg) {
				continue
			}
			n++
			_, after, _ := strings.Cut(l, " count=")
			c, _ := strconv.ParseInt(strings.Fields(after)[0], 10, 64)
			total += c
		}
		return n, total
	}
	redoLines, redone := count("INFO records redelivered")
	deadLines, dead := count("WARN records parked")
	if redone != n || dead != n || redoLines > 3 || deadLines > 3 {
		t.Fatalf("got %d redeliveries in %d lines and %d dead letters in %d lines, want %d each in at most 3:\n%s",
			redone, redoLines, dead, deadLines, n, all)
	}
	if !strings.Contains(all, "INFO group joined group=logged member=") ||
		!strings.Contains(all, "INFO partitions assigned group=logged partitions="+in+"[0 1]") ||
		!strings.Contains(all, "error=rejected") {
		t.Fatalf("got\n%s\nwant the group joined, its partitions assigned and the failures' error", all)
	}
	if len(lines) > 12 {
		t.Fatalf("got %d lines for %d failed records, want a handful:\n%s", len(lines), n, all)
	}
	t.Logf("%d lines:\n%s", len(lines), all)
}

// A broker that cannot be reached is an outage: one line when it begins,
// however many dials fail. No line holds the SASL password of a client
// option.
func TestLoggerReportsAnUnreachableBrokerOnceAndNoSecret(t *testing.T) {
	const password = "s3cr3t-Pa55word"
	rec := newRecorder()
	// Nothing listens on port 1: every dial fails.
	_, err := kafkax.NewSink(ctxT(t, 2*time.Second), "127.0.0.1:1", kafkax.Logger(slog.New(rec)),
		kafkax.WithClient(kgo.SASL(plain.Auth{User: "u", Pass: password}.AsMechanism())))
	if err == nil {
		t.Fatal("got a sink for an address nothing listens on")
	}
	if strings.Contains(err.Error(), password) {
		t.Fatalf("the error holds the password: %v", err)
	}
	lines := rec.all()
	if rec.count("WARN broker unreachable sink=kafka broker=127.0.0.1:1") != 1 {
		t.Fatalf("got lines %q, want one \"broker unreachable\" line", lines)
	}
	for _, l := range lines {
		if strings.Contains(l, password) {
			t.Fatalf("a line holds the password: %q", l)
		}
	}

}
