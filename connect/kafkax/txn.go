package kafkax

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// MinEpoch is the shortest epoch [Transactional] accepts.
const MinEpoch = 10 * time.Millisecond

// Transactional makes the source exactly once for Kafka → Kafka: what a
// [NewTxnSink] of the source produces, the dead letters of
// [DeadLetterTopic], and the source's offsets for the records they came
// from are committed in one Kafka transaction per epoch, so that a
// read-committed consumer of the output sees each input's output once.
//
// An epoch lasts every ([MaxInFlight] still bounds what is in flight
// within it). To close it the source stops emitting, waits until every
// record it emitted is settled, and commits, in the transaction, the
// settled prefix of each partition with the offsets settled past it in
// the commit's metadata, with the group's generation and member ID
// (KIP-447): the inputs whose outputs the transaction holds are exactly
// those whose offsets it commits. Then the next epoch begins and
// emission resumes. An epoch with nothing to commit (no record settled,
// nothing produced) ends no transaction; with [StopWhenCaughtUp], an
// epoch whose records are all settled when a poll finds nothing new
// commits then, not at its time. An epoch aborts — and every partition is
// read again from its last committed offset, so its inputs are delivered
// again — when a record is settled with a failure, a partition is revoked
// or lost, a produce fails because the transaction is no longer open (the
// broker aborted it after transaction.timeout.ms, say), or the commit
// fails. A record whose last delivery ([Redeliver]) fails goes to the
// [DeadLetterTopic] in the transaction that commits its offset.
//
// id is this member's transactional ID: unique among the members that
// run at once, and best reused by the same member after a restart, which
// fences (aborts) what its previous incarnation left open. A member that
// stalled and lost its partitions is fenced by the group's generation in
// its offset commit: its transaction aborts and nothing of it is seen.
//
// The source's client is franz-go's GroupTransactSession (one client for
// consuming and producing); [WithClient] options apply to it
// (kgo.TransactionTimeout among them, default 40 s). Its producer sends
// each write at once, as a [NewSink]'s does, and a request is retried
// after 10 ms, doubling to 2.5 s (franz-go's default: 250 ms, which a
// produce right after EndTxn may wait while the last transaction's
// markers are written). Costs: per epoch, the wait for the records in
// flight to settle (the pipeline's latency), a flush, and three round
// trips (offsets, a heartbeat, EndTxn), during which the source emits
// nothing (a GroupTransactSession may not poll while a transaction
// ends); per record, one more atomic operation. Panics if id is empty or
// every is under [MinEpoch].
func Transactional(id string, every time.Duration) SourceOption {
	if id == "" || every < MinEpoch {
		panic(fmt.Sprintf("kafkax: Transactional needs a transactional ID and an epoch ≥ %v, got %q, %v", MinEpoch, id, every))
	}
	return sourceOptionFunc(func(c *sourceConfig) { c.txnID, c.txnEvery = id, every })
}

// txn is the state of a transactional source's epochs. The reader's
// goroutine begins and ends every transaction; sinks produce into the open
// one under gate's read lock, and End holds its write lock.
type txn struct {
	sess  *kgo.GroupTransactSession
	id    string
	every time.Duration
	gate  sync.RWMutex

	// live counts the records emitted whose receipts have not settled:
	// the epoch closes when it is 0. quiet receives when it falls to 0.
	live  atomic.Int64
	quiet chan struct{}

	mu      sync.Mutex
	doom    error     // why the open epoch must abort; nil: none
	begun   time.Time // when the open epoch began
	touched bool      // the open epoch emitted a record

	// wrote is set when a record is handed to the producer in the open
	// transaction (a sink's write or a dead letter): an epoch that wrote
	// nothing and owes no offsets has nothing to end.
	wrote atomic.Bool
	fails map[recID]failedRec

	committed, aborted, epochNs, commitNs atomic.Int64
	log                                   *logger
}

// errTxnWindow fails the run of a transactional source that feeds a
// window stage: an abort would fold the records it delivers again into
// windows that hold them already.
var errTxnWindow = errors.New("kafkax: a Transactional source cannot feed a window stage (sluice.Window): an aborted epoch would fold its records twice")

// recID names a record across rewinds.
type recID struct {
	topic  string
	part   int32
	offset int64
}

// failedRec is how often a record was delivered and failed, and why last.
type failedRec struct {
	deliveries int32
	cause      error
}

func newTxn(id string, every time.Duration, log *logger) *txn {
	return &txn{id: id, every: every, quiet: make(chan struct{}, 1), fails: make(map[recID]failedRec), log: log}
}

// emitted counts a record handed to the pipeline; unemitted takes it back.
func (t *txn) emitted() {
	t.live.Add(1)
	t.mu.Lock()
	t.touched = true
	t.mu.Unlock()
}

func (t *txn) unemitted() { t.settled() }

// emittedAny reports whether the open epoch emitted a record.
func (t *txn) emittedAny() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.touched
}

// settled counts a receipt settled, whatever became of its partition.
func (t *txn) settled() {
	if t.live.Add(-1) == 0 {
		signal(t.quiet)
	}
}

// abort dooms the open epoch with cause, unless it is doomed already.
func (t *txn) abort(cause error) {
	t.mu.Lock()
	if t.doom == nil {
		t.doom = cause
	}
	t.mu.Unlock()
}

func (t *txn) doomed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.doom
}

// due reports whether the open epoch must close now, and otherwise how
// long until it must (0: nothing emitted, no bound).
func (t *txn) due() (bool, time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.doom != nil {
		return true, 0
	}
	if !t.touched {
		return false, 0
	}
	left := t.every - time.Since(t.begun)
	return left <= 0, max(left, time.Millisecond)
}

// failedRecord records a delivery of rec that failed with cause.
func (t *txn) failedRecord(rec *kgo.Record, deliveries int32, cause error) {
	t.mu.Lock()
	k := recID{rec.Topic, rec.Partition, rec.Offset}
	if f := t.fails[k]; f.deliveries < deliveries {
		t.fails[k] = failedRec{deliveries, cause}
	}
	t.mu.Unlock()
}

// failures returns how often rec was delivered and failed before.
func (t *txn) failures(rec *kgo.Record) (failedRec, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.fails[recID{rec.Topic, rec.Partition, rec.Offset}]
	return f, ok
}

// forget drops the failures of records below the offsets committed.
func (t *txn) forget(done []owedCommit) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.fails {
		for _, c := range done {
			if c.p.topic == k.topic && c.p.part == k.part && k.offset < c.eo.Offset {
				delete(t.fails, k)
			}
		}
	}
}

// txnClientOpts are the options a Transactional source's client gets
// before the user's (WithClient). Its producer sends at once, as a
// Sink's does: NewTxnSink's writes batch already. A produce that meets
// the last transaction still writing its markers (CONCURRENT_TRANSACTIONS,
// a few milliseconds after EndTxn) is retried after 10 ms rather than
// franz-go's 250 ms, doubling to 2.5 s for retries of any kind.
func txnClientOpts(id string) []kgo.Opt {
	return []kgo.Opt{
		kgo.TransactionalID(id),
		kgo.ProducerLinger(0),
		kgo.RetryBackoffFn(func(tries int) time.Duration {
			return min(10*time.Millisecond<<min(max(tries-1, 0), 8), 2500*time.Millisecond)
		}),
	}
}

// txnFatal reports whether a produce failed because the transaction is
// not open any more: the epoch must abort, and its inputs come again.
func txnFatal(err error) bool {
	return errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.ProducerFenced) ||
		errors.Is(err, kerr.TransactionAbortable) || errors.Is(err, kerr.InvalidTxnState) ||
		errors.Is(err, kerr.InvalidProducerIDMapping) || errors.Is(err, kgo.ErrAborting) ||
		err != nil && strings.Contains(err.Error(), "cannot produce record transactionally if not in a transaction")
}

// txnDelivery returns which delivery of rec, tracked as seq in p, this
// is, for a Transactional source: a record that failed comes again after
// its epoch aborted. One whose deliveries are spent is not emitted: it
// goes to the dead-letter topic in the open transaction (false), or the
// run fails.
func (s *Source) txnDelivery(p *partition, seq uint64, rec *kgo.Record) (int32, bool) {
	f, ok := s.tx.failures(rec)
	if !ok {
		return 1, true
	}
	if int(f.deliveries) < s.cfg.deliveries {
		// Counted in Redelivered as it was fetched again (track).
		p.setDeliveries(seq, f.deliveries+1)
		return f.deliveries + 1, true
	}
	s.received.Add(-1)
	if s.cfg.deadOwn {
		s.deadLetterInTxn(s.rd.context(), p, seq, rec, f)
		return 0, false
	}
	s.fail(fmt.Errorf("kafkax: record %s/%d/%d failed %d deliveries and no dead-letter topic is set: %w", rec.Topic, rec.Partition, rec.Offset, f.deliveries, f.cause))
	return 0, false
}

// checkTxn reports options that contradict each other.
func (c *sourceConfig) checkTxn() error {
	switch {
	case c.txnID == "" && c.deadOwn:
		return errors.New("kafkax: DeadLetterTopic needs a Transactional source (use DeadLetterTo)")
	case c.txnID != "" && c.deadLetter != nil:
		return errors.New("kafkax: a Transactional source's dead letters go through its own transaction: use DeadLetterTopic, not DeadLetterTo (a Sink of its own is outside the transaction)")
	case c.txnID != "" && c.uncommitted:
		return errors.New("kafkax: a Transactional source reads committed records only: drop ReadUncommitted")
	}
	return nil
}
