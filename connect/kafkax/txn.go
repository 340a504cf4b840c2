package kafkax

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
// emission resumes. An epoch aborts — and every partition is read again
// from its last committed offset, so its inputs are delivered again — when
// a record is settled with a failure, a partition is revoked or lost, a
// produce fails because the transaction is no longer open (the broker
// aborted it after transaction.timeout.ms, say), or the commit fails.
// A record whose last delivery ([Redeliver]) fails goes to the
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
// (kgo.TransactionTimeout among them, default 40 s). Costs: per epoch, the
// wait for the records in flight to settle (the pipeline's latency), a
// flush, and three round trips (offsets, a heartbeat, EndTxn); per
// record, one more atomic operation. Panics if id is empty or every is
// under [MinEpoch].
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
	fails   map[recID]failedRec

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

// txnFatal reports whether a produce failed because the transaction is
// not open any more: the epoch must abort, and its inputs come again.
func txnFatal(err error) bool {
	return errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.ProducerFenced) ||
		errors.Is(err, kerr.TransactionAbortable) || errors.Is(err, kerr.InvalidTxnState) ||
		errors.Is(err, kerr.InvalidProducerIDMapping) || errors.Is(err, kgo.ErrAborting) ||
		err != nil && strings.Contains(err.Error(), "cannot produce record transactionally if not in a transaction")
}

// quiesce flushes what was emitted and waits until every emitted record
// is settled; false if the pipeline stopped or the run failed first.
func (s *Source) quiesce(ctx context.Context, flush func() bool) bool {
	if !flush() {
		return false
	}
	for s.tx.live.Load() > 0 {
		select {
		case <-s.tx.quiet:
		case <-ctx.Done():
			return false
		case <-s.failCh:
			return false
		}
	}
	return true
}

// closeEpoch ends the open epoch once every record emitted is settled —
// committing it, or aborting it and rewinding every partition to its last
// commit — and begins the next. It returns false when the pipeline
// stopped before the epoch could close (Close aborts it), and an error
// when the transaction cannot go on.
func (s *Source) closeEpoch(ctx context.Context, flush func() bool) (bool, error) {
	t := s.tx
	start := time.Now()
	if !s.quiesce(ctx, flush) {
		return false, nil
	}
	t.gate.Lock()
	defer t.gate.Unlock()
	cause := t.doomed()
	var owed []owedCommit
	if cause == nil {
		for _, p := range s.tr.ownedParts() {
			if c, ok := p.owed(); ok {
				owed = append(owed, c)
			}
		}
	}
	committed, err := s.endTxn(ctx, owed, cause == nil)
	if err != nil {
		// An EndTxn whose outcome is unknown leaves franz-go in the
		// transaction until it is ended again with an abort, which
		// reinitialises the producer ID: that aborts the transaction if
		// the broker still has it open, and changes nothing if it
		// committed. Then the group's offsets say which it was.
		// While the broker is away, neither succeeds: both are tried
		// again until it answers (a Begin in a transaction never ended
		// would fail the run, and an outcome guessed could duplicate).
		if !s.abortOpen(ctx) {
			return false, nil
		}
		if cause == nil && len(owed) > 0 {
			ok, lerr := s.landed(ctx, owed)
			if lerr != nil {
				if ctx.Err() != nil {
					return false, nil
				}
				return false, fmt.Errorf("kafkax: group %q: transactional ID %q: whether the epoch committed is unknown (%v): %w", s.group, t.id, err, lerr)
			}
			if ok {
				committed, err = true, nil // EndTxn's answer was lost, not the commit
			}
		}
	}
	now := time.Now()
	t.mu.Lock()
	began := t.begun
	t.mu.Unlock()
	if committed {
		for _, c := range owed {
			c.p.confirmCommit(c)
		}
		t.forget(owed)
		t.committed.Add(1)
		t.epochNs.Add(int64(now.Sub(began)))
		t.commitNs.Add(int64(now.Sub(start)))
	} else {
		switch {
		case cause != nil:
		case err != nil:
			cause = err
		default:
			cause = errors.New("the group rebalanced during the epoch")
		}
		s.rewind()
		t.aborted.Add(1)
		t.log.log(slog.LevelWarn, "transaction aborted", slog.String("transactional_id", t.id), slog.String("cause", cause.Error()))
	}
	if berr := t.sess.Begin(); berr != nil {
		return false, fmt.Errorf("kafkax: group %q: transactional ID %q: beginning a transaction: %w", s.group, t.id, errors.Join(err, berr))
	}
	t.mu.Lock()
	t.doom, t.touched, t.begun = nil, false, time.Now()
	t.mu.Unlock()
	return true, nil
}

// endTxn ends the open transaction: with commit, it commits offs in it.
func (s *Source) endTxn(ctx context.Context, owed []owedCommit, commit bool) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, commitTimeout+s.txnTimeout())
	defer cancel()
	ctx = kgo.PreTxnCommitFnContext(ctx, func(req *kmsg.TxnOffsetCommitRequest) error {
		ids := make(map[string][16]byte, len(req.Topics))
		for _, rt := range req.Topics {
			ids[rt.Topic] = rt.TopicID
		}
		req.Topics = req.Topics[:0]
		at := make(map[string]int)
		for _, c := range owed {
			i, ok := at[c.p.topic]
			if !ok {
				rt := kmsg.NewTxnOffsetCommitRequestTopic()
				rt.Topic, rt.TopicID = c.p.topic, ids[c.p.topic]
				req.Topics = append(req.Topics, rt)
				i = len(req.Topics) - 1
				at[c.p.topic] = i
			}
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = c.p.part, c.eo.Offset, c.eo.Epoch
			meta := c.meta
			rp.Metadata = &meta
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		}
		return nil
	})
	return s.tx.sess.End(ctx, kgo.TransactionEndTry(commit))
}

func (s *Source) txnTimeout() time.Duration {
	if d, ok := s.cl.OptValue(kgo.TransactionTimeout).(time.Duration); ok {
		return d
	}
	return 40 * time.Second
}

// landed reports whether the group's committed offsets are those of
// owed, asked with RequireStable (the broker answers once no transaction
// of the group's offsets is pending): an End that failed after EndTxn
// committed — its answer lost — did commit the epoch. The caller has
// ended the transaction again with an abort first, so no transaction of
// this member is still open.
//
// A request that gets no answer is tried again, with a growing pause,
// for commitTimeout plus the transaction timeout; past that the error.
func (s *Source) landed(ctx context.Context, owed []owedCommit) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, commitTimeout+s.txnTimeout())
	defer cancel()
	pause := newBackoff()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = s.group
	req.RequireStable = true
	byTopic := make(map[string][]int32)
	for _, c := range owed {
		byTopic[c.p.topic] = append(byTopic[c.p.topic], c.p.part)
	}
	for topic, parts := range byTopic {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, parts
		req.Topics = append(req.Topics, rt)
	}
	var last error
	for pause.wait(ctx, last != nil) {
		resp, err := req.RequestWith(ctx, s.cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if last = err; err != nil {
			continue // no answer yet, or the coordinator moving or loading
		}
		got := make(map[topicPart]kmsg.OffsetFetchResponseTopicPartition)
		unstable := false
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if errors.Is(kerr.ErrorForCode(rp.ErrorCode), kerr.UnstableOffsetCommit) {
					unstable = true
				}
				got[topicPart{rt.Topic, rp.Partition}] = rp
			}
		}
		if unstable {
			last = kerr.UnstableOffsetCommit
			continue
		}
		for _, c := range owed {
			rp, ok := got[topicPart{c.p.topic, c.p.part}]
			if !ok || rp.Offset != c.eo.Offset || rp.Metadata == nil || *rp.Metadata != c.meta {
				return false, nil
			}
		}
		return true, nil
	}
	return false, errors.Join(last, ctx.Err())
}

// abortOpen ends a transaction whose End failed with an abort, trying
// again while the broker does not answer, until it does or ctx ends
// (false). franz-go stays in the transaction until an End succeeds, and
// the abort reinitialises the producer ID: it aborts the transaction if
// the broker still has it open and changes nothing if it committed.
func (s *Source) abortOpen(ctx context.Context) bool {
	pause := newBackoff()
	failed := false
	for pause.wait(ctx, failed) {
		err := s.cl.EndTransaction(ctx, kgo.TryAbort)
		if err == nil {
			return true
		}
		if !failed {
			s.tx.log.log(slog.LevelWarn, "transaction end retried", slog.String("transactional_id", s.tx.id), slog.String("cause", err.Error()))
		}
		failed = true
	}
	return false
}

// backoff paces retries: 50 ms after the first failure, doubling to 1 s.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 50 * time.Millisecond} }

// wait returns at once the first time or when the last try did not
// fail; after a failure it sleeps the next pause. It reports whether ctx
// is still live.
func (b *backoff) wait(ctx context.Context, failed bool) bool {
	if failed {
		t := time.NewTimer(b.d)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		b.d = min(2*b.d, time.Second)
	}
	return ctx.Err() == nil
}

// rewind makes every owned partition that fetched records start again:
// a fresh tracker (the old one's receipts settle for nothing), fetching
// from its last commit, skipping what that commit records as settled.
func (s *Source) rewind() {
	offs := s.tr.rewind()
	if len(offs) > 0 {
		s.cl.SetOffsets(offs)
	}
	s.rd.unsent = nil
}

// rewind replaces each owned partition that tracked records with a fresh
// one, and returns where each is to fetch from.
func (t *tracker) rewind() map[string]map[int32]kgo.EpochOffset {
	t.mu.Lock()
	slots := append([]*partition(nil), *t.slots.Load()...)
	var offs map[string]map[int32]kgo.EpochOffset
	var old []*partition
	for k, p := range t.owned {
		p.mu.Lock()
		committed, meta, start, fetched, last := p.committed, p.meta, p.start, p.last >= 0, p.last
		p.mu.Unlock()
		if !fetched {
			continue
		}
		np := newPartition(k.topic, k.part, uint64(len(slots)))
		slots = append(slots, np)
		np.committed, np.meta = committed, meta
		at := start
		if committed >= 0 {
			at = committed
			np.skip, np.before = decodeSettled(committed, meta)
		}
		np.before = max(np.before, last+1) // the aborted epochs' records come again
		t.owned[k] = np
		old = append(old, p)
		if at >= 0 {
			offs = addOffset(offs, np, kgo.EpochOffset{Epoch: -1, Offset: at})
		}
	}
	t.slots.Store(&slots)
	t.mu.Unlock()
	for _, p := range old {
		t.onRelease(p, p.release())
	}
	return offs
}

// drop releases the partitions of tps without committing: a transactional
// source's revoked or lost partitions, whose epoch aborts.
func (t *tracker) drop(tps map[string][]int32) {
	t.mu.Lock()
	parts := t.take(tps)
	t.mu.Unlock()
	for _, p := range parts {
		t.onRelease(p, p.release())
	}
}

// deadLetterInTxn produces the dead letter of rec, which failed its last
// delivery, in the open transaction, and settles it; false if the produce
// failed (the run fails).
func (s *Source) deadLetterInTxn(ctx context.Context, p *partition, seq uint64, rec *kgo.Record, f failedRec) bool {
	out := DeadLetterOut(Msg{r: rec, delivery: f.deliveries}, s.cfg.deadTopic, f.cause)
	r := &kgo.Record{Topic: out.Topic, Key: out.Key, Value: out.Value, Headers: out.Headers}
	if err := s.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		if txnFatal(err) {
			s.tx.abort(fmt.Errorf("dead-lettering record %s/%d/%d: %w", rec.Topic, rec.Partition, rec.Offset, err))
			return true
		}
		s.fail(fmt.Errorf("kafkax: dead-lettering record %s/%d/%d to %q: %w", rec.Topic, rec.Partition, rec.Offset, s.cfg.deadTopic, err))
		return false
	}
	s.deadLettered.Add(1)
	s.logDead.add(1, f.cause)
	s.ack(p, seq)
	return true
}

// NewTxnSink returns a [Sink] that produces in the transactions of src, a
// [Transactional] source: through its client, in the epoch open when
// each record is produced. Build every [Out] it produces from src's
// records (From set to the Msg's receipt): an Out from elsewhere is
// produced in the transaction too, but nothing ties it to an input.
// [Sink.Write] returns nil for records the producer could not store
// because the transaction is no longer open: the epoch aborts and their
// inputs are delivered again. Like [NewSink], it checks within a bounded
// time that a [ToTopic] topic exists. [Sink.Close] leaves the client to
// [Source.Close]. Panics if src is nil or not Transactional.
func NewTxnSink(ctx context.Context, src *Source, opts ...SinkOption) (*Sink, error) {
	if src == nil {
		panic("kafkax: NewTxnSink: nil Source")
	}
	if src.tx == nil {
		panic(fmt.Sprintf("kafkax: NewTxnSink: the source of group %q is not Transactional", src.group))
	}
	cfg := sinkOptions(opts)
	if len(cfg.kopts) > 0 {
		return nil, errors.New("kafkax: NewTxnSink: client options belong to the source (its client is shared): pass them to NewSource")
	}
	cctx, cancel := bounded(ctx, cfg.startTimeout)
	defer cancel()
	if cfg.topic != "" {
		if err := checkTopics(cctx, src.cl, "of the source", []string{cfg.topic}); err != nil {
			return nil, fmt.Errorf("kafkax: transactional sink: %w", err)
		}
	}
	g := newLogger(cfg.Logger, "sink", "kafka", "transactional_id", src.tx.id)
	return &Sink{cl: src.cl, cfg: cfg, tx: src.tx, log: g, logFailed: newTally(g, slog.LevelWarn, "records not stored")}, nil
}

// txnStats fills the transactional fields of st.
func (t *txn) stats(st *SourceStats) {
	if t == nil {
		return
	}
	st.TxnCommitted = t.committed.Load()
	st.TxnAborted = t.aborted.Load()
	st.TxnEpochTime = time.Duration(t.epochNs.Load())
	st.TxnCommitTime = time.Duration(t.commitNs.Load())
}

func (id recID) String() string {
	return id.topic + "/" + strconv.Itoa(int(id.part)) + "/" + strconv.FormatInt(id.offset, 10)
}
