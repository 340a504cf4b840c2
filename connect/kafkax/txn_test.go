package kafkax_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// txnSource creates a transactional source closed when the test ends.
func txnSource(t testing.TB, group string, topics []string, every time.Duration, opts ...kafkax.SourceOption) *kafkax.Source {
	t.Helper()
	id := fmt.Sprintf("%s-%s-%d", group, strings.ReplaceAll(t.Name(), "/", "_"), topicSeq.Add(1))
	return newSource(t, group, topics, append([]kafkax.SourceOption{kafkax.Transactional(id, every)}, opts...)...)
}

// txnSink creates the sink of src's transactions.
func txnSink(t testing.TB, src *kafkax.Source, opts ...kafkax.SinkOption) *kafkax.Sink {
	t.Helper()
	sink, err := kafkax.NewTxnSink(ctxT(t, 30*time.Second), src, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sink.Close)
	return sink
}

// readCommitted reads topic as a read-committed consumer: it stores a
// last record in each of its partitions, outside any transaction, and
// reads until it has seen each, so that every committed record before it
// was read. It counts the values read (the end records left out).
func readCommitted(t testing.TB, topic string, partitions int32) map[string]int {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	prod, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for p := range partitions {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte("\x00end")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := make(map[string]int)
	for ends := int32(0); ends < partitions; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read committed records of %s: saw %d of %d end records: %v", topic, ends, partitions, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "\x00end" {
				ends++
				return
			}
			got[string(r.Value)]++
		})
	}
	return got
}

// exactlyOnce checks that got holds each of want once and nothing else.
func exactlyOnce(t testing.TB, what string, got map[string]int, want []string) {
	t.Helper()
	missing, dup := 0, 0
	for _, w := range want {
		switch got[w] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	if missing > 0 || dup > 0 || len(got) != len(want) {
		t.Fatalf("%s: %d distinct values for %d wanted, %d missing, %d more than once", what, len(got), len(want), missing, dup)
	}
}

// fanOutIDs lists the outputs "i/a" and "i/b" of inputs 0..n-1 but skip.
func fanOutIDs(n int, skip ...int) []string {
	var ids []string
	for i := range n {
		if !containsInt(skip, i) {
			ids = append(ids, strconv.Itoa(i)+"/a", strconv.Itoa(i)+"/b")
		}
	}
	return ids
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// TestTransactionalFanOutIsExactlyOnceThroughAborts copies n records,
// two outputs each (FlatMap), in 50ms epochs. Every 700th record fails
// on its first delivery, which aborts its epoch (outputs already produced
// in it included) and delivers its inputs again; the poison record fails
// every delivery and ends in the dead-letter topic. A read-committed
// consumer finds each output once, and the poison record's dead letter
// once.
func TestTransactionalFanOutIsExactlyOnceThroughAborts(t *testing.T) {
	in, out, dead := newTopic(t, 3), newTopic(t, 3), newTopic(t, 1)
	const n, poison = 5000, 1234
	produceN(t, in, n)
	src := txnSource(t, "txn-fanout", []string{in}, 50*time.Millisecond,
		kafkax.StopWhenCaughtUp(), kafkax.Redeliver(2, 0), kafkax.DeadLetterTopic(dead))
	sink := txnSink(t, src, kafkax.ToTopic(out))

	p := sluice.New(ctxT(t, 2*time.Minute))
	msgs := kafkax.Read(p, "read", src)
	outs := sluice.FlatMap(p, "fan", msgs, 4, func(_ context.Context, m kafkax.Msg, emit func(kafkax.Out) bool) error {
		id, _ := strconv.Atoi(string(m.Value()))
		if !emit(kafkax.Out{Value: []byte(string(m.Value()) + "/a"), From: m.Receipt}) {
			return nil
		}
		if id == poison || id%700 == 0 && m.Delivery() == 1 {
			m.Fail(errors.New("bad record"))
			return nil
		}
		emit(kafkax.Out{Value: []byte(string(m.Value()) + "/b"), From: m.Receipt})
		return nil
	})
	kafkax.Produce(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	st := src.Stats()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	exactlyOnce(t, "output", readCommitted(t, out, 3), fanOutIDs(n, poison))
	exactlyOnce(t, "dead letters", readCommitted(t, dead, 1), []string{strconv.Itoa(poison)})
	if st.TxnAborted == 0 || st.TxnCommitted == 0 || st.Parked != 1 || st.Failed < n/700+2 {
		t.Fatalf("stats %+v: want aborts, commits, ≥ %d failures, 1 parked", st, n/700+2)
	}
	if l := lag(t, "txn-fanout", in); l != 0 {
		t.Fatalf("group lag after the run: %d; want 0", l)
	}
	t.Logf("source %+v", st)
}

// TestTransactionalDrainCommitsTheLastEpoch drains a pipeline whose epoch
// is far longer than the run: the drain commits what was read, and a
// read-committed consumer sees each output once.
func TestTransactionalDrainCommitsTheLastEpoch(t *testing.T) {
	in, out := newTopic(t, 2), newTopic(t, 2)
	const n = 500
	produceN(t, in, n)
	src := txnSource(t, "txn-drain", []string{in}, time.Hour)
	sink := txnSink(t, src, kafkax.ToTopic(out))

	p := sluice.New(ctxT(t, time.Minute))
	var seen atomic.Int64
	msgs := kafkax.Read(p, "read", src)
	outs := sluice.Map(p, "copy", msgs, 2, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		seen.Add(1)
		return copyOut(m), nil
	})
	kafkax.Produce(p, "write", outs, sink)
	eventually(t, time.Minute, "every record read", func() bool { return seen.Load() >= n })
	p.Drain()
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	st := src.Stats()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if st.TxnCommitted != 1 || st.TxnAborted != 0 {
		t.Fatalf("stats %+v: want the drain's one commit", st)
	}
	var want []string
	for i := range n {
		want = append(want, strconv.Itoa(i))
	}
	exactlyOnce(t, "output", readCommitted(t, out, 2), want)
	if l := lag(t, "txn-drain", in); l != 0 {
		t.Fatalf("group lag after the drain: %d; want 0", l)
	}
}

// TestTransactionalCaughtUpCommitsWithoutWaitingForTheEpoch reads a
// backlog with StopWhenCaughtUp and an epoch far longer than the run: once
// nothing new comes and every record is settled, the epoch commits at
// once and the source stops.
func TestTransactionalCaughtUpCommitsWithoutWaitingForTheEpoch(t *testing.T) {
	in, out := newTopic(t, 3), newTopic(t, 3)
	const n = 600
	produceN(t, in, n)
	src := txnSource(t, "txn-caught-up", []string{in}, time.Hour, kafkax.StopWhenCaughtUp())
	sink := txnSink(t, src, kafkax.ToTopic(out))

	p := sluice.New(ctxT(t, 2*time.Minute)) // the epoch's hour would fail it
	outs := sluice.Map(p, "copy", kafkax.Read(p, "read", src), 2, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		return copyOut(m), nil
	})
	kafkax.Produce(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	st := src.Stats()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if st.TxnCommitted < 1 || st.TxnAborted != 0 || st.Acked != n {
		t.Fatalf("stats %+v: want %d records acknowledged, committed, nothing aborted", st, n)
	}
	var want []string
	for i := range n {
		want = append(want, strconv.Itoa(i))
	}
	exactlyOnce(t, "output", readCommitted(t, out, 3), want)
}

func TestTransactionalMisuseIsReported(t *testing.T) {
	in := newTopic(t, 1)
	ctx := ctxT(t, 30*time.Second)
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			if s, _ := r.(string); !strings.HasPrefix(s, "kafkax: ") {
				t.Fatalf("%s: panic %v, want one naming kafkax", what, r)
			}
		}()
		f()
	}
	mustPanic("empty ID", func() { kafkax.Transactional("", time.Second) })
	mustPanic("short epoch", func() { kafkax.Transactional("id", time.Millisecond) })
	mustPanic("nil source", func() { _, _ = kafkax.NewTxnSink(ctx, nil) })
	plain := newSource(t, "txn-misuse-plain", []string{in})
	mustPanic("plain source", func() { _, _ = kafkax.NewTxnSink(ctx, plain) })
	sink := newSink(t)
	for name, opts := range map[string][]kafkax.SourceOption{
		"DeadLetterTopic without Transactional": {kafkax.DeadLetterTopic("dead")},
		"DeadLetterTo with Transactional":       {kafkax.Transactional("m1", time.Second), kafkax.DeadLetterTo(sink, "dead")},
		"ReadUncommitted with Transactional":    {kafkax.Transactional("m2", time.Second), kafkax.ReadUncommitted()},
	} {
		if src, err := kafkax.NewSource(ctx, broker, "txn-misuse", []string{in}, opts...); err == nil || !strings.HasPrefix(err.Error(), "kafkax: ") {
			if src != nil {
				src.Close()
			}
			t.Errorf("%s: NewSource error %v, want one naming kafkax", name, err)
		}
	}
	src := txnSource(t, "txn-misuse", []string{in}, time.Second)
	if _, err := kafkax.NewTxnSink(ctx, src, kafkax.ToTopic("no-such-topic-txn")); err == nil {
		t.Fatal("NewTxnSink accepted a topic that does not exist")
	}
	if _, err := kafkax.NewTxnSink(ctx, src, kafkax.WithClient(kgo.ClientID("x"))); err == nil {
		t.Fatal("NewTxnSink accepted client options for the source's client")
	}
}

// TestTransactionalSourceRefusesAWindow feeds a transactional source to
// a window stage: the run fails at the first record the window parks,
// with an error that says why, instead of folding records twice after an
// abort.
func TestTransactionalSourceRefusesAWindow(t *testing.T) {
	in := newTopic(t, 1)
	produceN(t, in, 10)
	src := txnSource(t, "txn-window", []string{in}, time.Second)
	p := sluice.New(ctxT(t, time.Minute))
	spec := sluice.WindowSpec[kafkax.Msg, struct{}, int]{
		Windows: sluice.Tumbling(time.Second),
		Time:    func(kafkax.Msg) time.Time { return time.Unix(0, 0) },
		Fold:    func(a *int, _ kafkax.Msg) { *a++ },
	}
	win := sluice.Window(p, "count", kafkax.Read(p, "read", src), 1, spec)
	sluice.ForEach(p, "store", win, 1, func(context.Context, sluice.Pane[struct{}, int]) error { return nil })
	err := p.Wait()
	if err == nil || !strings.Contains(err.Error(), "cannot feed a window stage") {
		t.Fatalf("run error %v, want the transactional source refusing the window", err)
	}
}
