package kafkax_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// TestStopWhenCaughtUpStopsOnATransactionalTopic: a transactional
// producer's commit marker takes an offset after the last record, so a
// group that committed every record is still one short of the end offset.
// The source tracks the marker, and commits past it.
func TestStopWhenCaughtUpStopsOnATransactionalTopic(t *testing.T) {
	in := newTopic(t, 1)
	const n, group = 200, "transactional"
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.TransactionalID("kafkax-test-"+in), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(t, time.Minute)
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		v := []byte(strconv.Itoa(i))
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: in, Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	src := newSource(t, group, []string{in}, kafkax.StopWhenCaughtUp())
	p := sluice.New(ctxT(t, 30*time.Second))
	sluice.ForEach(p, "ack", kafkax.Read(p, "read", src), 1, func(context.Context, kafkax.Msg) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatalf("the source did not stop: %v (%+v; lag %d)", err, src.Stats(), lag(t, group, in))
	}
	if st := src.Stats(); st.Acked != n {
		t.Fatalf("acked %d; want %d", st.Acked, n)
	}
	if l := lag(t, group, in); l != 0 {
		t.Fatalf("lag %d; want 0 (the marker committed past)", l)
	}
}

// TestWhatSettlesDuringADrainIsCommittedBeforeClose: a pipeline drains
// with many records still to store, slowly; what it settles meanwhile is
// committed every CommitEvery interval, not only at Close, so a process
// killed during a long graceful stop redoes little.
func TestWhatSettlesDuringADrainIsCommittedBeforeClose(t *testing.T) {
	in := newTopic(t, 1)
	const n, group = 3000, "drain-commits"
	produceN(t, in, n)
	src := newSource(t, group, []string{in}, kafkax.CommitEvery(100*time.Millisecond), kafkax.MaxInFlight(2500))
	p := sluice.New(ctxT(t, time.Minute))
	msgs := kafkax.Read(p, "read", src, sluice.Chunk(100), sluice.Buffer(2000))
	sluice.ForEach(p, "slow", msgs, 1, func(context.Context, kafkax.Msg) error {
		time.Sleep(time.Millisecond)
		return nil
	})
	eventually(t, 30*time.Second, "100 records acked", func() bool { return src.Stats().Acked >= 100 })
	p.Drain()
	atDrain := src.Stats().Acked
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	acked := src.Stats().Acked
	if acked < atDrain+200 {
		t.Fatalf("only %d records acked during the drain (%d before); the test needs more", acked-atDrain, atDrain)
	}
	// Before Close: the commits went on.
	eventually(t, 5*time.Second, "everything acked during the drain committed before Close", func() bool {
		return lag(t, group, in) == n-acked
	})
}

// TestADrainEndsAWaitingPoll: with nothing to read, the source waits in a
// poll with no deadline of its own; a drain must end it, or Wait would
// never return.
func TestADrainEndsAWaitingPoll(t *testing.T) {
	in := newTopic(t, 1)
	src := newSource(t, "idle", []string{in})
	p := sluice.New(ctxT(t, time.Minute))
	sluice.ForEach(p, "ack", kafkax.Read(p, "read", src), 1, func(context.Context, kafkax.Msg) error { return nil })
	time.Sleep(time.Second) // the member joins and polls
	p.Drain()
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestEveryRecordAcknowledgedAfterADrainWasCountedAsReceived: a drain
// stops the source in the middle of emitting a fetch; the records it
// emitted before stopping are processed and acknowledged by the drain,
// and each of them was received.
func TestEveryRecordAcknowledgedAfterADrainWasCountedAsReceived(t *testing.T) {
	in := newTopic(t, 1)
	const n = 3000
	produceN(t, in, n)
	src := newSource(t, "drain-received", []string{in}, kafkax.MaxInFlight(2500))
	p := sluice.New(ctxT(t, time.Minute))
	msgs := kafkax.Read(p, "read", src, sluice.Chunk(100), sluice.Buffer(500))
	sluice.ForEach(p, "slow", msgs, 1, func(context.Context, kafkax.Msg) error {
		time.Sleep(500 * time.Microsecond)
		return nil
	})
	eventually(t, 30*time.Second, "100 records acked", func() bool { return src.Stats().Acked >= 100 })
	p.Drain()
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	st := src.Stats()
	if st.Received != st.Acked || st.Acked == 0 || st.Acked == n {
		t.Fatalf("source %+v after the drain; want Received = Acked, the drain in the middle of the input", st)
	}
}

// txnProducer is a transactional producer closed when the test ends.
type txnProducer struct {
	t  testing.TB
	cl *kgo.Client
}

func newTxnProducer(t testing.TB, id string) *txnProducer {
	t.Helper()
	// The broker aborts a transaction open longer than this: far beyond
	// any test, so that an open one stays open.
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.TransactionalID(id), kgo.ProducerLinger(0),
		kgo.TransactionTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &txnProducer{t, cl}
}

// write stores the values prefix+from … prefix+to-1 in topic's partition
// 0 in one transaction, left open when end is nil, else ended with *end.
func (tp *txnProducer) write(topic, prefix string, from, to int, end *kgo.TransactionEndTry) {
	tp.t.Helper()
	ctx := ctxT(tp.t, time.Minute)
	if err := tp.cl.BeginTransaction(); err != nil {
		tp.t.Fatal(err)
	}
	for i := from; i < to; i++ {
		r := &kgo.Record{Topic: topic, Value: []byte(prefix + strconv.Itoa(i))}
		if err := tp.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			tp.t.Fatal(err)
		}
	}
	if end != nil {
		tp.end(*end)
	}
}

func (tp *txnProducer) end(how kgo.TransactionEndTry) {
	tp.t.Helper()
	if err := tp.cl.EndTransaction(ctxT(tp.t, time.Minute), how); err != nil {
		tp.t.Fatal(err)
	}
}

var commit, abort = kgo.TryCommit, kgo.TryAbort

// readValues reads src with StopWhenCaughtUp set and returns the values
// it delivered, in order (topics of one partition).
func readValues(t *testing.T, src *kafkax.Source) []string {
	t.Helper()
	var got []string
	p := sluice.New(ctxT(t, time.Minute))
	sluice.ForEach(p, "ack", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg) error {
		got = append(got, string(m.Value()))
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatalf("the source did not stop: %v (%+v, delivered %d)", err, src.Stats(), len(got))
	}
	return got
}

// TestTheSourceNeverDeliversAnAbortedTransaction: between two committed
// transactions a producer aborts one; a third transaction is left open.
// The source delivers the committed records only, in order, and stops
// caught up at the last stable offset (before the open transaction), not
// at the high watermark, which a read committed fetch never reaches while
// the transaction is open.
func TestTheSourceNeverDeliversAnAbortedTransaction(t *testing.T) {
	in := newTopic(t, 1)
	const group = "read-committed"
	tp := newTxnProducer(t, "kafkax-test-"+in)
	tp.write(in, "c", 0, 100, &commit)
	tp.write(in, "a", 0, 100, &abort)
	tp.write(in, "c", 100, 200, &commit)
	tp.write(in, "open", 0, 10, nil)
	defer tp.end(abort)

	src := newSource(t, group, []string{in}, kafkax.StopWhenCaughtUp())
	got := readValues(t, src)
	if len(got) != 200 {
		t.Fatalf("delivered %d records, %v…; want the 200 committed ones", len(got), got[:min(len(got), 5)])
	}
	for i, v := range got {
		if want := "c" + strconv.Itoa(i); v != want {
			t.Fatalf("record %d is %q; want %q (committed records only, in order)", i, v, want)
		}
	}
	if st := src.Stats(); st.Acked != 200 || st.Received != 200 {
		t.Fatalf("source %+v; want 200 received and acked", st)
	}
}

// TestReadUncommittedDeliversEveryRecord: with ReadUncommitted the source
// delivers the aborted transaction's records too, in offset order, and
// stops at the high watermark once the last transaction has ended.
func TestReadUncommittedDeliversEveryRecord(t *testing.T) {
	in := newTopic(t, 1)
	const group = "read-uncommitted"
	tp := newTxnProducer(t, "kafkax-test-"+in)
	tp.write(in, "c", 0, 100, &commit)
	tp.write(in, "a", 0, 100, &abort)
	tp.write(in, "c", 100, 200, &commit)

	got := readValues(t, newSource(t, group, []string{in}, kafkax.StopWhenCaughtUp(), kafkax.ReadUncommitted()))
	var want []string
	for i := range 100 {
		want = append(want, "c"+strconv.Itoa(i))
	}
	for i := range 100 {
		want = append(want, "a"+strconv.Itoa(i))
	}
	for i := 100; i < 200; i++ {
		want = append(want, "c"+strconv.Itoa(i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("delivered %d records; want the 300 stored, in offset order", len(got))
	}
	if l := lag(t, group, in); l != 0 {
		t.Fatalf("lag %d; want 0", l)
	}
}
