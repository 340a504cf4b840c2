package kafkax

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Source reads topics as a member of a Kafka consumer group. Create one
// with [NewSource]; add it to a pipeline with [Read]; [Source.Close] it
// when done. Several processes with the same group share the topics'
// partitions, each partition read by one of them at a time.
type Source struct {
	cl     *kgo.Client
	group  string
	topics []string
	cfg    sourceConfig

	mu    sync.Mutex // guards parts
	parts map[topicPart]*partition

	commitMu sync.Mutex // one commit at a time, so a later one never goes before an earlier

	reading  atomic.Bool
	unsent   []polled                        // tracked by a Read that stopped before emitting them; only the reading goroutine touches it
	ctx      atomic.Pointer[context.Context] // the running Read's context, for dead-letter produces
	paused   atomic.Bool
	wake     chan struct{} // cap 1: settled enough to resume, or a retry is due
	commitCh chan struct{} // cap 1: CommitEvery's count reached

	retryMu sync.Mutex
	retries []retryItem

	failMu  sync.Mutex
	failErr error
	failCh  chan struct{} // closed with the first failure

	closeOnce sync.Once
	closeErr  error

	inflight     atomic.Int64
	sinceCommit  atomic.Int64
	fetched      atomic.Int64
	settledN     atomic.Int64
	failedCount  atomic.Int64
	deadLettered atomic.Int64
	commits      atomic.Int64
	commitErrs   atomic.Int64
	fetchErrs    atomic.Int64
	pauses       atomic.Int64
	pausedNs     atomic.Int64
}

type topicPart struct {
	topic string
	part  int32
}

type retryItem struct {
	m   Msg
	due time.Time
}

// NewSource creates a consumer-group member of group reading topics from
// the brokers (a comma-separated list of host:port), and checks within a
// bounded time ([DefaultStartTimeout] unless ctx has a deadline) that a
// broker answers and that every topic exists, so that such mistakes are
// reported here. A group with no committed offset starts at the beginning
// of each partition. The member joins the group at once; it leaves it at
// [Source.Close].
//
// The client commits nothing by itself: offsets are committed only by the
// source, for the settled prefix of each partition (see [Read]).
func NewSource(ctx context.Context, brokers, group string, topics []string, opts ...SourceOption) (*Source, error) {
	seeds := splitBrokers(brokers)
	if len(seeds) == 0 || group == "" || len(topics) == 0 || slices.Contains(topics, "") {
		return nil, fmt.Errorf("kafkax: a source needs brokers, a group and topics, got %q, %q, %q", brokers, group, topics)
	}
	cfg := sourceOptions(opts)
	s := &Source{
		group:    group,
		topics:   slices.Clone(topics),
		cfg:      cfg,
		parts:    make(map[topicPart]*partition),
		wake:     make(chan struct{}, 1),
		commitCh: make(chan struct{}, 1),
		failCh:   make(chan struct{}),
	}
	kopts := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topics...),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(s.assigned),
		kgo.OnPartitionsRevoked(s.revoked),
		kgo.OnPartitionsLost(s.lost),
		// Rebalance callbacks wait while the source matches polled
		// records with the partitions it owns (see Source.track).
		kgo.BlockRebalanceOnPoll(),
	}, cfg.kopts...)
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kafkax: source: %w", err)
	}
	cctx, cancel := bounded(ctx, cfg.startTimeout)
	defer cancel()
	if err := checkTopics(cctx, cl, brokers, topics); err != nil {
		cl.Close()
		return nil, fmt.Errorf("kafkax: source of group %q: %w", group, err)
	}
	s.cl = cl
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

// Read starts a source stage that emits the records of src as [Msg] values
// until the pipeline stops (or, with [StopWhenIdle], until there is nothing
// left to read). Every Msg must be settled — [Msg.Ack] once its result is
// committed ([Produce] does this), or [Msg.Fail] — or its partition's
// commits stop at it.
//
// Offsets are committed only for the settled prefix of each partition: a
// record settled before an earlier one of its partition (an unordered
// [sluice.Map] finishes them in any order) is committed when the earlier
// one is. Commits are batched ([CommitEvery]) and made by a goroutine the
// stage owns. At most [MaxInFlight] records are emitted and unsettled;
// then fetching pauses until half of them are settled. When the group takes
// a partition away, the stage stops emitting its records, commits its
// settled prefix, and lets settlements of its other records go: the new
// owner processes them again. A source is read by one pipeline at a time.
//
// Cost: one poll per batch of fetched records, two uncontended mutex
// operations per record (one when emitted, one when settled).
func Read(p *sluice.Pipeline, name string, src *Source, opts ...sluice.StageOption) sluice.Stream[Msg] {
	if src == nil {
		panic(fmt.Sprintf("kafkax: Read %q: nil Source", name))
	}
	return sluice.From(p, name, src.run, opts...)
}

func (s *Source) run(ctx context.Context, out *sluice.Emitter[Msg]) error {
	if !s.reading.CompareAndSwap(false, true) {
		return fmt.Errorf("kafkax: source of group %q is read by another pipeline", s.group)
	}
	defer s.reading.Store(false)
	s.ctx.Store(&ctx)
	stop, done := make(chan struct{}), make(chan struct{})
	go s.committer(stop, done)
	defer func() {
		close(stop)
		<-done
		if s.paused.Swap(false) {
			s.cl.ResumeFetchTopics(s.topics...)
		}
	}()

	// The client will not fetch again what an earlier Read tracked and
	// did not emit, and commits cannot pass it: emit it first.
	if _, rest, ok := s.send(s.unsent, out); !ok {
		s.unsent = rest
		return ctx.Err()
	}
	s.unsent = nil

	high := int64(s.cfg.maxInFlight)
	low := high / 2
	idleSince := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if err := s.failure(); err != nil {
			return err
		}
		if !s.emitRetries(out) {
			return ctx.Err()
		}
		if n := s.inflight.Load(); n >= high {
			// Backpressure: stop fetching and wait for the pipeline to
			// settle half of what it holds.
			start := time.Now()
			s.pauses.Add(1)
			s.paused.Store(true)
			s.cl.PauseFetchTopics(s.topics...)
			for s.inflight.Load() > low && s.failure() == nil && !s.retryDue() {
				timer.Reset(s.cfg.pollWait)
				var stopped bool
				if !out.Await(func() {
					select {
					case <-s.wake:
					case <-timer.C:
					case <-ctx.Done():
						stopped = true
					}
				}) || stopped {
					return ctx.Err()
				}
			}
			s.paused.Store(false)
			s.cl.ResumeFetchTopics(s.topics...)
			s.pausedNs.Add(int64(time.Since(start)))
			continue
		}

		room := int(high - s.inflight.Load())
		pctx, cancel := context.WithTimeout(ctx, s.pollWait())
		var polled []polled
		var closed bool
		ok := out.Await(func() {
			fs := s.cl.PollRecords(pctx, room)
			closed = fs.IsClientClosed()
			polled = s.track(fs)
			s.cl.AllowRebalance()
		})
		cancel()
		if !ok || ctx.Err() != nil {
			return ctx.Err()
		}
		if closed {
			return fmt.Errorf("kafkax: source of group %q: client closed", s.group)
		}
		n, rest, ok := s.send(polled, out)
		if !ok {
			s.unsent = rest
			return ctx.Err()
		}
		if n > 0 {
			idleSince = time.Now()
			continue
		}
		if s.cfg.stopIdle > 0 && time.Since(idleSince) >= s.cfg.stopIdle && s.inflight.Load() == 0 && s.allCommitted() {
			// Idle is not enough: a broker that is away looks idle too.
			// An error here (the broker is restarting, say) only means
			// asking again after the next idle poll.
			if done, err := s.caughtUp(ctx); err == nil && done {
				return nil
			}
		}
	}
}

// pollWait is how long the next poll may wait for records: short while a
// retry is pending.
func (s *Source) pollWait() time.Duration {
	s.retryMu.Lock()
	defer s.retryMu.Unlock()
	if len(s.retries) > 0 {
		return max(time.Until(s.retries[0].due), time.Millisecond)
	}
	return s.cfg.pollWait
}

// polled is the records of one partition from one poll, tracked from
// seq first on.
type polled struct {
	p     *partition
	first uint64
	recs  []*kgo.Record
}

// track adds the records of fs to the trackers of their partitions. It
// runs before the client allows a rebalance after the poll
// (BlockRebalanceOnPoll), so a partition without a tracker was revoked or
// lost before the poll returned: its records are the new owner's, and are
// neither emitted nor tracked. Records emitted before their partition is
// revoked are settled as usual, but their settlements commit nothing.
func (s *Source) track(fs kgo.Fetches) []polled {
	var out []polled
	fs.EachPartition(func(ftp kgo.FetchTopicPartition) {
		if ftp.Err != nil && !errors.Is(ftp.Err, context.DeadlineExceeded) && !errors.Is(ftp.Err, context.Canceled) {
			s.fetchErrs.Add(1)
		}
		if len(ftp.Records) == 0 {
			return
		}
		s.mu.Lock()
		p := s.parts[topicPart{ftp.Topic, ftp.Partition}]
		s.mu.Unlock()
		if p == nil {
			return // revoked while they were fetched: the new owner reads them
		}
		first, ok := p.track(ftp.Records)
		if !ok {
			return
		}
		s.inflight.Add(int64(len(ftp.Records)))
		s.fetched.Add(int64(len(ftp.Records)))
		out = append(out, polled{p, first, ftp.Records})
	})
	return out
}

// send emits tracked records, but those of a partition that is gone
// meanwhile (they are the new owner's, and will not be settled). It
// returns how many it sent, and, when the pipeline stopped (ok false), the
// records it did not send: they stay tracked and unsettled, so no commit
// passes them, and the next Read emits them.
func (s *Source) send(batches []polled, out *sluice.Emitter[Msg]) (sent int, rest []polled, ok bool) {
	for k, b := range batches {
		b.p.mu.Lock()
		gone := b.p.gone
		b.p.mu.Unlock()
		if gone {
			s.inflight.Add(-int64(len(b.recs)))
			continue
		}
		for i, r := range b.recs {
			if !out.Send(Msg{r: r, p: b.p, seq: b.first + uint64(i)}) {
				rest = append([]polled{{b.p, b.first + uint64(i), b.recs[i:]}}, batches[k+1:]...)
				return sent + i, rest, false
			}
		}
		sent += len(b.recs)
	}
	return sent, nil, true
}

// settled is called once for every record that becomes settled.
func (s *Source) settled() {
	n := s.inflight.Add(-1)
	s.settledN.Add(1)
	if s.paused.Load() && n <= int64(s.cfg.maxInFlight/2) {
		s.signal(s.wake)
	}
	if s.sinceCommit.Add(1) == int64(s.cfg.commitCount) {
		s.signal(s.commitCh)
	}
}

func (s *Source) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (s *Source) retry(m Msg, due time.Time) {
	s.retryMu.Lock()
	s.retries = append(s.retries, retryItem{m, due})
	s.retryMu.Unlock()
	s.signal(s.wake)
}

func (s *Source) retryDue() bool {
	s.retryMu.Lock()
	defer s.retryMu.Unlock()
	return len(s.retries) > 0 && !time.Now().Before(s.retries[0].due)
}

// emitRetries sends the failed records whose delay has passed; false if the
// pipeline stopped.
func (s *Source) emitRetries(out *sluice.Emitter[Msg]) bool {
	s.retryMu.Lock()
	now := time.Now()
	n := 0
	for n < len(s.retries) && !now.Before(s.retries[n].due) {
		n++
	}
	due := slices.Clone(s.retries[:n])
	s.retries = slices.Delete(s.retries, 0, n)
	s.retryMu.Unlock()
	for _, r := range due {
		if !out.Send(r.m) {
			return false
		}
	}
	return true
}

func (s *Source) fail(err error) {
	s.failMu.Lock()
	defer s.failMu.Unlock()
	if s.failErr == nil {
		s.failErr = err
		close(s.failCh)
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

// runCtx is the context of the running Read, or a cancelled one.
func (s *Source) runCtx() context.Context {
	if c := s.ctx.Load(); c != nil {
		return *c
	}
	return context.Background()
}

func (s *Source) allCommitted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.parts {
		p.mu.Lock()
		busy := len(p.entries) > 0 || p.next > p.committed
		if p.gone {
			busy = false
		}
		p.mu.Unlock()
		if busy {
			return false
		}
	}
	return true
}

// caughtUp reports whether the group has committed every partition of
// the source's topics up to its end, whichever member read it.
func (s *Source) caughtUp(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	adm := kadm.NewClient(s.cl)
	ends, err := adm.ListEndOffsets(ctx, s.topics...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return false, err
	}
	starts, err := adm.ListStartOffsets(ctx, s.topics...)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return false, err
	}
	committed, err := adm.FetchOffsetsForTopics(ctx, s.group, s.topics...)
	if err == nil {
		err = committed.Error()
	}
	if err != nil {
		return false, err
	}
	done := true
	ends.Each(func(end kadm.ListedOffset) {
		at := int64(-1)
		if c, ok := committed.Lookup(end.Topic, end.Partition); ok {
			at = c.At
		}
		if at < 0 {
			st, _ := starts.Lookup(end.Topic, end.Partition)
			at = st.Offset
		}
		if at < end.Offset {
			done = false
		}
	})
	return done, nil
}

// committer commits the settled prefixes every CommitEvery interval, or
// sooner when its count is reached, until stop is closed.
func (s *Source) committer(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(s.cfg.commitInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		case <-s.commitCh:
		}
		_ = s.commit(context.Background(), nil, false)
	}
}

// commit commits the settled prefix of the partitions in only (every
// partition not gone when only is nil); with revoke it marks them gone
// first, so that nothing is committed for them afterwards.
func (s *Source) commit(ctx context.Context, only []*partition, revoke bool) error {
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	if only == nil {
		s.mu.Lock()
		for _, p := range s.parts {
			only = append(only, p)
		}
		s.mu.Unlock()
	}
	offsets := make(map[string]map[int32]kgo.EpochOffset)
	var parts []*partition
	for _, p := range only {
		p.mu.Lock()
		eo, ok := p.commitPoint()
		if revoke {
			p.gone = true
		}
		p.mu.Unlock()
		if !ok {
			continue
		}
		if offsets[p.topic] == nil {
			offsets[p.topic] = make(map[int32]kgo.EpochOffset)
		}
		offsets[p.topic][p.part] = eo
		parts = append(parts, p)
	}
	s.sinceCommit.Store(0)
	if len(parts) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var cerr error
	s.cl.CommitOffsetsSync(ctx, offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil && cerr == nil {
					cerr = fmt.Errorf("topic %q partition %d: %w", t.Topic, rp.Partition, err)
				}
			}
		}
	})
	if cerr != nil {
		s.commitErrs.Add(1)
		return fmt.Errorf("kafkax: commit for group %q: %w", s.group, cerr)
	}
	s.commits.Add(1)
	for _, p := range parts {
		p.mu.Lock()
		if o := offsets[p.topic][p.part].Offset; o > p.committed {
			p.committed = o
		}
		p.mu.Unlock()
	}
	return nil
}

func (s *Source) assigned(_ context.Context, _ *kgo.Client, tps map[string][]int32) {
	for t, ps := range tps {
		for _, part := range ps {
			k := topicPart{t, part}
			s.mu.Lock()
			s.parts[k] = newPartition(s, t, part)
			s.mu.Unlock()
		}
	}
}

// take removes the trackers of tps from the source.
func (s *Source) take(tps map[string][]int32) []*partition {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*partition
	for t, ps := range tps {
		for _, part := range ps {
			k := topicPart{t, part}
			if p := s.parts[k]; p != nil {
				out = append(out, p)
				delete(s.parts, k)
			}
		}
	}
	return out
}

// revoked runs when the group takes partitions away: their settled
// prefixes are committed, and nothing of them is emitted or committed
// from now on.
func (s *Source) revoked(ctx context.Context, _ *kgo.Client, tps map[string][]int32) {
	if parts := s.take(tps); len(parts) > 0 {
		_ = s.commit(ctx, parts, true)
	}
	s.dropRetries()
}

// lost runs when the partitions were lost (the member was thrown out of
// the group): a commit would be refused, so nothing is committed.
func (s *Source) lost(_ context.Context, _ *kgo.Client, tps map[string][]int32) {
	for _, p := range s.take(tps) {
		p.mu.Lock()
		p.gone = true
		p.mu.Unlock()
	}
	s.dropRetries()
}

// dropRetries forgets pending retries of partitions that are gone.
func (s *Source) dropRetries() {
	s.retryMu.Lock()
	defer s.retryMu.Unlock()
	s.retries = slices.DeleteFunc(s.retries, func(r retryItem) bool {
		r.m.p.mu.Lock()
		defer r.m.p.mu.Unlock()
		return r.m.p.gone
	})
}

// Close commits the settled prefix of every partition the source holds,
// leaves the group and closes the client. Call it after the pipeline that
// reads the source is done; the records it left unsettled are processed
// again by whichever member gets their partitions. It returns the error of
// the final commit, if any.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = s.commit(context.Background(), nil, false)
		s.cl.Close()
	})
	return s.closeErr
}

// SourceStats counts what a [Source] has done since it was created.
type SourceStats struct {
	Fetched      int64         // records emitted (retries not counted)
	Settled      int64         // records settled: acknowledged or dead-lettered
	InFlight     int64         // emitted and not settled
	Failed       int64         // Msg.Fail calls that counted
	DeadLettered int64         // records stored in the dead-letter topic
	Commits      int64         // successful offset commits
	CommitErrors int64         // failed commits (retried with the next one)
	FetchErrors  int64         // errors reported by fetches (franz-go retries them)
	Pauses       int64         // times fetching paused because MaxInFlight was reached
	Paused       time.Duration // total time fetching was paused
}

// Stats returns the source's counts. It is safe to call at any time.
func (s *Source) Stats() SourceStats {
	return SourceStats{
		Fetched:      s.fetched.Load(),
		Settled:      s.settledN.Load(),
		InFlight:     s.inflight.Load(),
		Failed:       s.failedCount.Load(),
		DeadLettered: s.deadLettered.Load(),
		Commits:      s.commits.Load(),
		CommitErrors: s.commitErrs.Load(),
		FetchErrors:  s.fetchErrs.Load(),
		Pauses:       s.pauses.Load(),
		Paused:       time.Duration(s.pausedNs.Load()),
	}
}
