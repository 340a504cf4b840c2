package kafkax_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
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

// txnCopy runs a pipeline that copies src to out through its transactional
// sink, calling work on each record first; done receives Wait's result.
func txnCopy(ctx context.Context, t testing.TB, src *kafkax.Source, out string, work func(kafkax.Msg)) (*sluice.Pipeline, chan error) {
	t.Helper()
	sink := txnSink(t, src, kafkax.ToTopic(out))
	p := sluice.New(ctx)
	outs := sluice.Map(p, "work", kafkax.Read(p, "read", src), 2, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		work(m)
		return copyOut(m), nil
	})
	kafkax.Produce(p, "write", outs, sink)
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	return p, done
}

func inputIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i)
	}
	return ids
}

// TestTransactionalRebalanceMidEpochAbortsAndStaysExactlyOnce lets member
// B join while member A is inside an epoch: A's epoch aborts, the
// partitions it keeps are read again from their last commit, those that
// move are read by B from there, and a read-committed consumer finds each
// output once.
func TestTransactionalRebalanceMidEpochAbortsAndStaysExactlyOnce(t *testing.T) {
	in, out := newTopic(t, 4), newTopic(t, 4)
	const n, group = 4000, "txn-rebalance"
	produceN(t, in, n, kgo.ProducerBatchMaxBytes(512))
	ctx := ctxT(t, 2*time.Minute)
	var seenA atomic.Int64
	slow := func(m kafkax.Msg) { time.Sleep(200 * time.Microsecond) }
	a := txnSource(t, group, []string{in}, 200*time.Millisecond, kafkax.StopWhenCaughtUp(), kafkax.WithClient(kgo.FetchMaxPartitionBytes(2048)))
	_, aDone := txnCopy(ctx, t, a, out, func(m kafkax.Msg) { seenA.Add(1); slow(m) })
	eventually(t, time.Minute, "A committed an epoch and works in the next", func() bool {
		return a.Stats().TxnCommitted > 0 && seenA.Load() > 500
	})
	b := txnSource(t, group, []string{in}, 200*time.Millisecond, kafkax.StopWhenCaughtUp())
	_, bDone := txnCopy(ctx, t, b, out, slow)
	for _, done := range []chan error{aDone, bDone} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	sa, sb := a.Stats(), b.Stats()
	t.Logf("A %+v\nB %+v", sa, sb)
	if sa.TxnAborted == 0 || sb.TxnCommitted == 0 {
		t.Fatalf("A aborted %d epochs, B committed %d: want the rebalance to abort A's epoch and B to commit", sa.TxnAborted, sb.TxnCommitted)
	}
	exactlyOnce(t, "output", readCommitted(t, out, 4), inputIDs(n))
}

// TestTransactionalEpochTimedOutByTheBrokerIsRedelivered holds one record
// in a stage until the broker has aborted the epoch's transaction
// (transaction.timeout.ms of 2s): the source notices when it produces or
// commits, aborts, and delivers the epoch's records again; a
// read-committed consumer finds each output once.
func TestTransactionalEpochTimedOutByTheBrokerIsRedelivered(t *testing.T) {
	in, out := newTopic(t, 2), newTopic(t, 2)
	const n, stuck, group = 1000, 500, "txn-timeout"
	produceN(t, in, n)
	ctx := ctxT(t, 2*time.Minute)
	adm := admin(t)
	id := "txn-timeout-" + strconv.Itoa(int(topicSeq.Add(1)))
	src := newSource(t, group, []string{in}, kafkax.Transactional(id, 100*time.Millisecond), kafkax.StopWhenCaughtUp(),
		kafkax.WithClient(kgo.TransactionTimeout(2*time.Second)))
	var held atomic.Bool
	_, done := txnCopy(ctx, t, src, out, func(m kafkax.Msg) {
		if string(m.Value()) != strconv.Itoa(stuck) || held.Swap(true) {
			return
		}
		// Stuck until the broker has ended the transaction on its own:
		// until it is seen open (the other worker's outputs open it), and
		// then seen ended. A state read before the epoch produced anything
		// is the last epoch's end.
		open := false
		for ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			ds, err := adm.DescribeTransactions(ctx, id)
			if err != nil {
				continue
			}
			d, ok := ds[id]
			switch {
			case ok && d.State == "Ongoing":
				open = true
			case ok && open:
				return
			}
		}
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := src.Stats()
	t.Logf("source %+v", st)
	if st.TxnAborted == 0 {
		t.Fatal("no epoch aborted after the broker timed one out")
	}
	exactlyOnce(t, "output", readCommitted(t, out, 2), inputIDs(n))
}

// stallDialer dials connections that it can stall: while stalled, reads
// and writes wait (as on a network that drops everything), so the
// member's heartbeats stop and the group throws it out.
type stallDialer struct {
	mu      sync.Mutex
	stalled chan struct{} // closed when the stall ends; nil: not stalled
}

func (d *stallDialer) stall() {
	d.mu.Lock()
	d.stalled = make(chan struct{})
	d.mu.Unlock()
}

func (d *stallDialer) wake() {
	d.mu.Lock()
	close(d.stalled)
	d.stalled = nil
	d.mu.Unlock()
}

func (d *stallDialer) wait(closed chan struct{}) error {
	d.mu.Lock()
	ch := d.stalled
	d.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-closed:
		return net.ErrClosed
	}
}

func (d *stallDialer) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &stallConn{Conn: c, d: d, closed: make(chan struct{})}, nil
}

type stallConn struct {
	net.Conn
	d      *stallDialer
	once   sync.Once
	closed chan struct{}
}

func (c *stallConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if werr := c.d.wait(c.closed); werr != nil {
		return 0, werr
	}
	return n, err
}

func (c *stallConn) Write(b []byte) (int, error) {
	if err := c.d.wait(c.closed); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

func (c *stallConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestTransactionalZombieIsFenced stalls member A's network mid-epoch
// until the group throws it out; member B takes every partition and
// copies everything from A's last commit. Then A wakes, with its epoch
// open: it must not commit it. With its own transactional ID, B leaves A
// fenced by the group (A's generation is gone: KIP-447), and A aborts;
// with A's ID (A restarted elsewhere while the old process hung), B's
// producer fences A's: A's transaction is aborted by the broker and A's
// run fails. Either way a read-committed consumer finds each output once
// — nothing of A's late epoch — and each abort is logged once with its
// cause.
func TestTransactionalZombieIsFenced(t *testing.T) {
	t.Run("own ID", func(t *testing.T) { zombie(t, false) })
	t.Run("same ID", func(t *testing.T) { zombie(t, true) })
}

func zombie(t *testing.T, sameID bool) {
	in, out := newTopic(t, 2), newTopic(t, 2)
	const n = 2000
	group := "txn-zombie-" + strconv.FormatBool(sameID)
	idA := group + "-a-" + strconv.Itoa(int(topicSeq.Add(1)))
	idB := group + "-b-" + strconv.Itoa(int(topicSeq.Add(1)))
	if sameID {
		idB = idA
	}
	produceN(t, in, n)
	ctx, cancel := context.WithCancel(ctxT(t, 2*time.Minute))
	defer cancel()
	d := &stallDialer{}
	var seenA atomic.Int64
	rec := newRecorder()
	a := newSource(t, group, []string{in}, kafkax.Transactional(idA, 300*time.Millisecond), kafkax.MaxInFlight(100), kafkax.Logger(slog.New(rec)),
		kafkax.WithClient(kgo.Dialer(d.dial), kgo.SessionTimeout(1500*time.Millisecond), kgo.HeartbeatInterval(100*time.Millisecond),
			kgo.RebalanceTimeout(2*time.Second)))
	pa, aDone := txnCopy(ctx, t, a, out, func(m kafkax.Msg) {
		if seenA.Add(1) == 300 {
			d.stall() // A's stage goes on; its network does not
		}
		time.Sleep(time.Millisecond)
	})
	eventually(t, time.Minute, "A stalled", func() bool { return seenA.Load() >= 300 })
	committedA := a.Stats().TxnCommitted
	b := newSource(t, group, []string{in}, kafkax.Transactional(idB, 100*time.Millisecond), kafkax.StopWhenCaughtUp())
	_, bDone := txnCopy(ctx, t, b, out, func(kafkax.Msg) {})
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	d.wake()
	eventually(t, time.Minute, "A aborted its late epoch", func() bool { return a.Stats().TxnAborted > 0 || sameID && len(aDone) > 0 })
	pa.Drain()
	if err := <-aDone; err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("A's run: %v", err)
	}
	sa, sb := a.Stats(), b.Stats()
	t.Logf("A %+v\nB %+v", sa, sb)
	if sa.TxnCommitted != committedA {
		// A committing after it woke would be a zombie's commit, if it
		// held records B processed too: the output check below says.
		t.Logf("A committed %d epochs after it woke", sa.TxnCommitted-committedA)
	}
	if err := a.Close(); err != nil {
		t.Logf("A's close: %v", err)
	}
	exactlyOnce(t, "output", readCommitted(t, out, 2), inputIDs(n))
	// Each abort is logged once, with its cause.
	var aborts []string
	for _, l := range rec.all() {
		if strings.HasPrefix(l, "WARN transaction aborted") {
			aborts = append(aborts, l)
		}
	}
	t.Logf("A's aborts: %q", aborts)
	if st := a.Stats(); int64(len(aborts)) != st.TxnAborted || len(aborts) > 0 && !strings.Contains(aborts[0], "cause=") {
		t.Fatalf("%d abort lines for %d aborts, want one each with its cause: %q", len(aborts), st.TxnAborted, aborts)
	}
}

// answerCutter dials connections that, while armed, lose the answer to
// a request of one kind (key: its API key): the broker gets the request
// and acts on it; the client reads nothing more from the connection,
// which closes a moment later.
type answerCutter struct {
	key  byte
	left atomic.Int32 // requests still to cut
	cut  atomic.Int32 // requests cut
}

// API keys of the requests a cutter may cut.
const (
	apiEndTxn          = 26
	apiTxnOffsetCommit = 28
)

func (c *answerCutter) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: conn, c: c, closed: make(chan struct{})}, nil
}

type cutConn struct {
	net.Conn
	c      *answerCutter
	cut    atomic.Bool
	once   sync.Once
	closed chan struct{}
}

func (c *cutConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	// A request: a 4-byte length, then the API key.
	if err == nil && len(b) >= 6 && b[4] == 0 && b[5] == c.c.key && c.c.left.Add(-1) >= 0 {
		c.c.cut.Add(1)
		c.cut.Store(true)
		time.AfterFunc(300*time.Millisecond, func() { c.Close() }) // the broker has answered by then
	}
	return n, err
}

func (c *cutConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.cut.Load() {
		<-c.closed
		return 0, net.ErrClosed
	}
	return n, err
}

func (c *cutConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestTransactionalEndErrorAfterTheCommitIsNotAnAbort cuts the answers
// to one epoch's EndTxn (every try of it) after the broker got the
// request: End reports an error although the transaction committed. The
// source finds the epoch's offsets committed and counts it committed
// rather than delivering its records again — which would duplicate them,
// since its outputs are visible.
func TestTransactionalEndErrorAfterTheCommitIsNotAnAbort(t *testing.T) {
	in, out := newTopic(t, 2), newTopic(t, 2)
	const n, group = 2000, "txn-end-error"
	produceN(t, in, n)
	ctx := ctxT(t, 2*time.Minute)
	cutter := &answerCutter{key: apiEndTxn}
	rec := newRecorder()
	// At most 200 records in flight.
	src := txnSource(t, group, []string{in}, 100*time.Millisecond, kafkax.StopWhenCaughtUp(), kafkax.MaxInFlight(200), kafkax.Logger(slog.New(rec)),
		kafkax.WithClient(kgo.Dialer(cutter.dial), kgo.RequestRetries(2)))
	var armed atomic.Bool
	_, done := txnCopy(ctx, t, src, out, func(kafkax.Msg) {
		// Each record takes 500 µs on one of two workers, so the run
		// lasts at least 0.5 s: five epochs or more. Once an epoch has
		// committed (the first may abort on a fresh broker, whose group
		// coordinator is still loading), cut the answer of the next
		// EndTxn: the try and its two retries.
		time.Sleep(500 * time.Microsecond)
		if !armed.Load() && src.Stats().TxnCommitted > 0 && armed.CompareAndSwap(false, true) {
			cutter.left.Store(3)
		}
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := src.Stats()
	t.Logf("source %+v, %d EndTxn answers cut; log %q", st, cutter.cut.Load(), rec.all())
	if !armed.Load() {
		t.Fatal("no epoch committed before the last record: nothing was cut")
	}
	if cutter.cut.Load() == 0 {
		t.Fatal("no EndTxn was cut")
	}
	exactlyOnce(t, "output", readCommitted(t, out, 2), inputIDs(n))
	// Cutting the connection may cut a heartbeat too, and a later epoch
	// may abort for that; the epoch whose answer was lost must not.
	for _, l := range rec.all() {
		if strings.Contains(l, "transaction aborted") && strings.Contains(l, "closed network connection") {
			t.Fatalf("the epoch whose EndTxn answer was lost aborted: %s", l)
		}
	}
}

// TestTransactionalBrokerRestartMidRunStaysExactlyOnce stops the broker
// for a few epochs while a transactional copy runs and starts it again on
// the same files and ports: the epoch that was closing when the broker
// went away ends (committed or aborted, whichever the broker did), the
// source waits for the broker instead of failing, and a read-committed
// consumer finds each output once.
func TestTransactionalBrokerRestartMidRunStaysExactlyOnce(t *testing.T) {
	in, out := newTopic(t, 4), newTopic(t, 4)
	const n, group = 20000, "txn-restart"
	produceN(t, in, n)
	ctx := ctxT(t, 3*time.Minute)
	src := txnSource(t, group, []string{in}, 100*time.Millisecond, kafkax.StopWhenCaughtUp(), kafkax.MaxInFlight(500))
	_, done := txnCopy(ctx, t, src, out, func(kafkax.Msg) { time.Sleep(time.Millisecond) }) // 10 s of work
	eventually(t, time.Minute, "a few epochs committed", func() bool { return src.Stats().TxnCommitted >= 3 && src.Stats().Acked >= n/10 })
	at := src.Stats()
	restartBroker(t, 3*time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	st := src.Stats()
	t.Logf("source %+v", st)
	if at.Acked >= n {
		t.Fatalf("source %+v at the restart: the run was over before it", at)
	}
	exactlyOnce(t, "output", readCommitted(t, out, 4), inputIDs(n))
}
