package kafkax

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Source reads topics as a member of a Kafka consumer group and settles
// what it emitted: it is the [sluice.Settler] of every [Msg]'s receipt.
// Create one with [NewSource]; add it to a pipeline with [Read];
// [Source.Close] it when done. Several processes with the same group share
// the topics' partitions, each partition read by one of them at a time.
//
// A Source is a reader (the poll loop, see [Read]), a tracker of each
// partition's settled prefix, which sees that it is committed, and a flow
// control that bounds what is in flight ([MaxInFlight]).
type Source struct {
	cl     *kgo.Client
	group  string
	topics []string
	cfg    sourceConfig

	tr   *tracker
	fl   *flow
	tx   *txn // Transactional; nil: at least once
	redo redeliveries
	rd   reader

	failMu  sync.Mutex
	failErr error
	failCh  chan struct{} // closed with the first failure

	closeOnce sync.Once
	closeErr  error

	revokes revokers // told when a partition is released (park.go)

	log                                *logger // Logger; nil: none
	logRedelivered, logDead, logCommit *tally

	received, acked, failed, redelivered, deadLettered, skipped, fetchErrs atomic.Int64
}

// NewSource creates a consumer-group member of group reading topics from
// the brokers (a comma-separated list of host:port), and checks within a
// bounded time ([DefaultStartTimeout] unless ctx has a deadline) that a
// broker answers and that every topic exists, so that such mistakes are
// reported here. A group with no committed offset starts at the beginning
// of each partition. The source reads committed records only (see
// [ReadUncommitted]). The member joins the group at once; it leaves it at
// [Source.Close].
//
// The source builds its own franz-go client, since a group member's
// callbacks live on its client; [WithClient] adds options to it. Only
// the settled prefix of each partition is committed, with what is settled
// past it in the commit's metadata: the source commits every
// [CommitEvery] interval, at a rebalance, when caught up and at Close. A
// member that starts on a partition skips the records its last commit
// records as settled. The source runs one goroutine of its own, for the
// periodic commits; Close ends it.
func NewSource(ctx context.Context, brokers, group string, topics []string, opts ...SourceOption) (*Source, error) {
	seeds := splitBrokers(brokers)
	if len(seeds) == 0 || group == "" || len(topics) == 0 || slices.Contains(topics, "") {
		return nil, fmt.Errorf("kafkax: a source needs brokers, a group and topics, got %q, %q, %q", brokers, group, topics)
	}
	cfg := sourceOptions(opts)
	if err := cfg.checkTxn(); err != nil {
		return nil, err
	}
	s := &Source{group: group, topics: slices.Clone(topics), cfg: cfg, fl: newFlow(cfg.maxInFlight), failCh: make(chan struct{})}
	s.tr = newTracker(group, func(p *partition, n int) { s.fl.done(n); s.revokes.call(p.slot) })
	s.rd.init()
	s.log = newLogger(cfg.Logger, "group", group)
	s.logRedelivered = newTally(s.log, slog.LevelInfo, "records redelivered")
	s.logDead = newTally(s.log, slog.LevelWarn, "records parked")
	s.logCommit = newTally(s.log, slog.LevelWarn, "commit failed")
	s.tr.commitFailed = s.logCommit
	if cfg.txnID != "" {
		s.tx = newTxn(cfg.txnID, cfg.txnEvery, s.log)
		s.tr.txn = true
	}
	kopts := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		// The tracker commits itself (tracker.go).
		kgo.DisableAutoCommit(),
		kgo.OnOffsetsFetched(s.tr.offsetsFetched),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// A transaction's commit marker takes an offset: tracked, it
		// lets the settled prefix, and the commit, pass it.
		kgo.KeepControlRecords(),
		kgo.OnPartitionsAssigned(func(ctx context.Context, cl *kgo.Client, tps map[string][]int32) {
			s.tr.assigned(ctx, cl, tps)
			s.log.rebalanced(cl, "assigned", tps)
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, tps map[string][]int32) {
			s.log.rebalanced(cl, "revoked", tps)
			if s.tx != nil {
				if len(tps) > 0 {
					s.tx.abort(fmt.Errorf("partitions revoked: %s", partitions(tps)))
				}
				s.tr.drop(tps)
				return
			}
			s.tr.revoked(ctx, cl, tps)
		}),
		kgo.OnPartitionsLost(func(ctx context.Context, cl *kgo.Client, tps map[string][]int32) {
			s.log.rebalanced(cl, "lost", tps)
			if s.tx != nil {
				if len(tps) > 0 {
					s.tx.abort(fmt.Errorf("partitions lost: %s", partitions(tps)))
				}
				s.tr.drop(tps)
				return
			}
			s.tr.lost(ctx, cl, tps)
		}),
		// Rebalance callbacks wait while the reader matches polled
		// records with the partitions it owns (see Source.track).
		kgo.BlockRebalanceOnPoll(),
	}, cfg.kopts...)
	if !cfg.uncommitted {
		kopts = slices.Insert(kopts, 0, kgo.Opt(kgo.FetchIsolationLevel(kgo.ReadCommitted())))
	}
	if s.log != nil {
		kopts = append(kopts, kgo.WithHooks(s.log))
	}
	var cl *kgo.Client
	if s.tx != nil {
		kopts = slices.Insert(kopts, 0, txnClientOpts(cfg.txnID)...)
		sess, err := kgo.NewGroupTransactSession(kopts...)
		if err != nil {
			return nil, fmt.Errorf("kafkax: source: %w", err)
		}
		s.tx.sess, cl = sess, sess.Client()
	} else {
		var err error
		if cl, err = kgo.NewClient(kopts...); err != nil {
			return nil, fmt.Errorf("kafkax: source: %w", err)
		}
	}
	s.cl, s.tr.cl = cl, cl
	cctx, cancel := bounded(ctx, cfg.startTimeout)
	defer cancel()
	if err := checkTopics(cctx, cl, brokers, topics); err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafkax: source of group %q: %w", group, err)
	}
	if s.tx != nil {
		if err := s.tx.sess.Begin(); err != nil {
			cl.Close()
			return nil, fmt.Errorf("kafkax: source of group %q: transactional ID %q: %w", group, cfg.txnID, err)
		}
		s.tx.begun = time.Now()
		return s, nil // the reader commits, in transactions
	}
	s.tr.start(cfg.commitInterval)
	return s, nil
}

func splitBrokers(brokers string) []string {
	var seeds []string
	for b := range strings.SplitSeq(brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			seeds = append(seeds, b)
		}
	}
	return seeds
}

// bounded gives ctx a deadline d from now unless it has one.
func bounded(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// checkTopics asks a broker for the metadata of topics (all of the
// cluster's when topics is empty) and reports a broker that does not
// answer or a topic that does not exist.
func checkTopics(ctx context.Context, cl *kgo.Client, brokers string, topics []string) error {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer in time (is a broker listening there?): %w", err)
		}
		return fmt.Errorf("brokers %s: %w", brokers, err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			return fmt.Errorf("topic %q: %w", name, err)
		}
	}
	return nil
}

// Client returns the source's franz-go client.
func (s *Source) Client() *kgo.Client { return s.cl }

// Settle implements [sluice.Settler]: the receipt of a [Msg] reports
// here. An acknowledged record joins its partition's settled prefix once
// every record before it has; a failed one is emitted again
// ([Redeliver]), or after its last delivery goes to the dead-letter topic
// ([DeadLetterTo]) or fails the run. A settlement of a record whose
// partition moved to another member does nothing.
func (s *Source) Settle(key uint64, cause error) {
	if s.tx != nil {
		defer s.tx.settled()
	}
	p, seq := s.tr.lookup(key)
	if p == nil {
		return
	}
	if cause == nil {
		s.ack(p, seq)
		return
	}
	if s.tx != nil {
		// The epoch holds whatever the record produced before it
		// failed: it aborts, and the record comes again after the
		// rewind, as its next delivery (read.go).
		if rec, n, ok := p.failed(seq); ok {
			s.failed.Add(1)
			s.tx.failedRecord(rec, n, cause)
			s.logRedelivered.add(1, cause)
			s.tx.abort(fmt.Errorf("record %s/%d/%d failed: %w", rec.Topic, rec.Partition, rec.Offset, cause))
			s.rd.kick()
		}
		return
	}
	rec, n, ok := p.failed(seq)
	if !ok {
		return // its partition moved: the new owner delivers it
	}
	s.failed.Add(1)
	if p.unpark(seq) {
		s.fl.add(1) // in flight again until it settles
	}
	m := Msg{r: rec, delivery: n}
	switch {
	case int(n) < s.cfg.deliveries:
		p.redelivered(seq)
		s.logRedelivered.add(1, cause)
		s.redo.add(redelivery{p: p, seq: seq, rec: rec, delivery: n + 1, due: time.Now().Add(s.cfg.redeliverDelay)})
		s.rd.kick()
	case s.cfg.deadLetter != nil:
		out := DeadLetterOut(m, s.cfg.deadTopic, cause)
		out.From = sluice.Receipt{} // the source settles it when stored
		s.cfg.deadLetter.produceDead(s.rd.context(), out, func(err error) {
			if err != nil {
				s.fail(fmt.Errorf("kafkax: dead-lettering record %s to %q: %w", m.ID(), s.cfg.deadTopic, err))
				return
			}
			s.deadLettered.Add(1)
			s.logDead.add(1, cause)
			s.ack(p, seq)
		})
	default:
		s.fail(fmt.Errorf("kafkax: record %s failed %d deliveries and no dead-letter topic is set: %w", m.ID(), n, cause))
	}
}

// ack settles the entry of seq in p.
func (s *Source) ack(p *partition, seq uint64) {
	open, parked, _ := p.settle(seq)
	if open {
		s.acked.Add(1)
		if !parked { // a parked record left the flow when it was parked (park.go)
			s.fl.done(1)
		}
	}
}

// fail records the first failure of the run; the reader returns it.
func (s *Source) fail(err error) {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	if s.failErr == nil {
		s.failErr = err
		close(s.failCh)
		s.rd.kick()
	}
}

func (s *Source) failure() error {
	select {
	case <-s.failCh:
		s.failMu.Lock()
		defer s.failMu.Unlock()
		return s.failErr
	default:
		return nil
	}
}

// Close commits the settled prefix of every partition the source owns,
// leaves the group and closes the client. Call it after the pipeline that
// reads the source is done; the records it left unsettled are processed
// again by whichever member gets their partitions. It returns nil only if
// a commit covers every settled record of the partitions the source owns;
// otherwise an error naming the partitions whose settled records no
// commit covers (with the failed commit's error, if one failed): those
// that were lost (a broker was away) and not assigned back, and those
// whose commit failed. Their next owner processes those records again.
// Close waits for at most two commits, of up to 10 s each.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		if s.tx != nil {
			s.closeTxn()
			return
		}
		s.tr.stop()
		err := s.tr.commitOwned(context.Background())
		s.cl.Close() // leaving the group commits again what is owed (revoked)
		if rest := s.tr.settledNotCommitted(); rest != nil {
			s.closeErr = errors.Join(err, rest)
		}
		s.logRedelivered.flush()
		s.logDead.flush()
		s.logCommit.flush()
	})
	return s.closeErr
}
