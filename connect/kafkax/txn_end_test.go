package kafkax_test

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// Faults while an epoch's transaction ends.

// TestTransactionalLostOffsetCommitAbortsTheEpoch loses the answers to
// one epoch's offset commit (TxnOffsetCommit, every try of it) after the
// broker got it: the End aborts the transaction (its offsets pending in
// it with it), the epoch's inputs are delivered again, and a
// read-committed consumer finds each output once.
func TestTransactionalLostOffsetCommitAbortsTheEpoch(t *testing.T) {
	in, out := newTopic(t, 2), newTopic(t, 2)
	const n, group = 3000, "txn-lost-offsets"
	produceN(t, in, n)
	ctx := ctxT(t, 2*time.Minute)
	cutter := &answerCutter{key: apiTxnOffsetCommit}
	rec := newRecorder()
	src := txnSource(t, group, []string{in}, 50*time.Millisecond, kafkax.StopWhenCaughtUp(), kafkax.MaxInFlight(300), kafkax.Logger(slog.New(rec)),
		kafkax.WithClient(kgo.Dialer(cutter.dial), kgo.RequestRetries(2)))
	var seen atomic.Int64
	var armed atomic.Bool
	_, done := txnCopy(ctx, t, src, out, func(kafkax.Msg) {
		time.Sleep(500 * time.Microsecond)
		// Once an epoch has committed, cut the answers of the next
		// offset commit: the try and its two retries.
		if seen.Add(1) >= n/3 && !armed.Load() && src.Stats().TxnCommitted > 0 && armed.CompareAndSwap(false, true) {
			cutter.left.Store(3)
		}
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := src.Stats()
	t.Logf("source %+v, %d TxnOffsetCommit answers cut", st, cutter.cut.Load())
	if !armed.Load() || cutter.cut.Load() == 0 {
		t.Fatal("no offset commit was cut")
	}
	exactlyOnce(t, "output", readCommitted(t, out, 2), inputIDs(n))
	lost := 0
	for _, l := range rec.all() {
		if strings.HasPrefix(l, "WARN transaction aborted") && strings.Contains(l, "commit transaction offsets") {
			lost++
		}
	}
	if lost == 0 {
		t.Fatalf("no abort for the lost offset commit: %q", rec.all())
	}
}

// TestTransactionalRebalanceWhileAnEpochEndsStaysExactlyOnce makes
// member A's every EndTxn take 200ms longer (its request waits before it
// is sent), so that an End is in flight most of the time; member B joins
// meanwhile. Whether the rebalance comes before A's EndTxn (the End
// aborts) or after it (the next epoch aborts), a read-committed consumer
// finds each output once.
func TestTransactionalRebalanceWhileAnEpochEndsStaysExactlyOnce(t *testing.T) {
	in, out := newTopic(t, 4), newTopic(t, 4)
	const n, group = 4000, "txn-end-rebalance"
	produceN(t, in, n, kgo.ProducerBatchMaxBytes(512))
	ctx := ctxT(t, 2*time.Minute)
	var seenA atomic.Int64
	slow := func(kafkax.Msg) { time.Sleep(200 * time.Microsecond) }
	d := &endTxnDelayer{delay: 200 * time.Millisecond}
	a := txnSource(t, group, []string{in}, 50*time.Millisecond, kafkax.StopWhenCaughtUp(), kafkax.WithClient(kgo.Dialer(d.dial), kgo.FetchMaxPartitionBytes(2048)))
	_, aDone := txnCopy(ctx, t, a, out, func(m kafkax.Msg) { seenA.Add(1); slow(m) })
	eventually(t, time.Minute, "A committed an epoch and works in the next", func() bool {
		return a.Stats().TxnCommitted > 0 && seenA.Load() > 500
	})
	b := txnSource(t, group, []string{in}, 50*time.Millisecond, kafkax.StopWhenCaughtUp())
	_, bDone := txnCopy(ctx, t, b, out, slow)
	for _, done := range []chan error{aDone, bDone} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	sa, sb := a.Stats(), b.Stats()
	t.Logf("A %+v (%d EndTxn delayed)\nB %+v", sa, d.delayed.Load(), sb)
	if sa.TxnAborted == 0 || sb.TxnCommitted == 0 || d.delayed.Load() == 0 {
		t.Fatalf("A aborted %d epochs (%d EndTxn delayed), B committed %d: want the rebalance to abort A's epoch and B to commit", sa.TxnAborted, d.delayed.Load(), sb.TxnCommitted)
	}
	exactlyOnce(t, "output", readCommitted(t, out, 4), inputIDs(n))
}

// endTxnDelayer dials connections that hold each EndTxn request for
// delay before sending it.
type endTxnDelayer struct {
	delay   time.Duration
	delayed atomic.Int32
}

func (d *endTxnDelayer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &delayConn{Conn: conn, d: d}, nil
}

type delayConn struct {
	net.Conn
	d *endTxnDelayer
}

func (c *delayConn) Write(b []byte) (int, error) {
	// A request: a 4-byte length, then the API key.
	if len(b) >= 6 && b[4] == 0 && b[5] == apiEndTxn {
		c.d.delayed.Add(1)
		time.Sleep(c.d.delay)
	}
	return c.Conn.Write(b)
}
