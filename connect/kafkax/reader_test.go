package kafkax_test

import (
	"context"
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
