package kafkax

// Closing a transactional source's epochs: the barrier, the commit and
// the abort, and what an End whose answer was lost did.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

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
	if cause == nil && len(owed) == 0 && !t.wrote.Load() {
		// Nothing to commit: the transaction goes on into the next
		// epoch. (Ending it would cost a round trip or two, and
		// franz-go holds an End that committed no offsets for 500 ms.)
		t.mu.Lock()
		t.touched, t.begun = false, time.Now()
		t.mu.Unlock()
		return true, nil
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
	t.wrote.Store(false)
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
	s.tx.wrote.Store(true)
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

// closeTxn aborts the epoch still open and closes the client.
func (s *Source) closeTxn() {
	t := s.tx
	t.gate.Lock()
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	t.mu.Lock()
	touched := t.touched || t.doom != nil
	t.mu.Unlock()
	if _, err := t.sess.End(ctx, kgo.TryAbort); touched {
		t.aborted.Add(1)
		msg := "closed with the epoch open"
		if err != nil {
			msg += ": " + err.Error()
		}
		t.log.log(slog.LevelWarn, "transaction aborted", slog.String("transactional_id", t.id), slog.String("cause", msg))
	}
	cancel()
	t.gate.Unlock()
	t.sess.Close()
	s.logRedelivered.flush()
	s.logDead.flush()
}
