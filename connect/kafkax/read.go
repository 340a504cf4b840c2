package kafkax

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Read starts a source stage that emits the records of src as [Msg] values
// until the pipeline drains or stops (or, with [StopWhenCaughtUp], until
// there is nothing left to read). Each Msg carries a [sluice.Receipt]:
// whoever stores what derives from it settles it (the core's sinks do,
// [Produce] among them), and the source commits, for each partition, the
// offsets of its settled prefix. A record that is never settled stops its
// partition's commits: keep the receipt with the data.
//
// A drain ends a waiting poll at once; commits go on until the source is
// closed, so what settles while the pipeline drains is committed. At most
// [MaxInFlight] records are tracked and unsettled; then fetching pauses
// until half of them are settled. When the group takes a partition away,
// the stage stops emitting its records, commits its settled prefix, and
// lets settlements of its other records go: the new owner processes them
// again. A source is read by one pipeline at a time. Its counts
// ([Source.Stats]) are the stage's [sluice.StageStats].Connector, so an
// exporter of the pipeline shows them (the sluice.kafka.source metrics).
//
// Cost: one poll per batch of fetched records; per record, a receipt (one
// allocation) and two uncontended mutex operations (tracked when fetched,
// settled by its receipt).
func Read(p *sluice.Pipeline, name string, src *Source, opts ...sluice.StageOption) sluice.Stream[Msg] {
	if src == nil {
		panic(fmt.Sprintf("kafkax: Read %q: nil Source", name))
	}
	out := sluice.From(p, name, src.run, opts...)
	src.attach(p, name)
	return out
}

func (s *Source) run(ctx context.Context, out *sluice.Emitter[Msg]) error {
	err := s.read(ctx, out)
	if s.tx != nil && err == nil && ctx.Err() == nil && s.failure() == nil {
		// A drain: the last epoch commits once what was emitted is
		// settled.
		_, err = s.closeEpoch(ctx, out.Flush)
	}
	return err
}

func (s *Source) read(ctx context.Context, out *sluice.Emitter[Msg]) error {
	r := &s.rd
	if !r.reading.CompareAndSwap(false, true) {
		return fmt.Errorf("kafkax: source of group %q is read by another pipeline", s.group)
	}
	defer r.reading.Store(false)
	r.ctx.Store(&ctx)
	r.mu.Lock()
	r.stopped = false
	r.mu.Unlock()
	exit, watched := make(chan struct{}), make(chan struct{})
	go func() { // ends a waiting poll when the pipeline drains or stops
		defer close(watched)
		select {
		case <-out.Done():
			r.stop()
		case <-exit:
		}
	}()
	defer func() {
		close(exit)
		<-watched
	}()

	// The client will not fetch again what an earlier Read tracked and
	// did not emit, and commits cannot pass it: emit it first.
	if _, ok := s.send(out, r.unsent); !ok {
		return nil
	}
	for {
		if err := s.failure(); err != nil {
			return err
		}
		if s.tx != nil {
			if due, _ := s.tx.due(); due {
				if ok, err := s.closeEpoch(ctx, out.Flush); !ok || err != nil {
					return err
				}
				continue
			}
		}
		if !s.sendRedeliveries(out) {
			return nil
		}
		if s.fl.full() {
			if !s.waitForRoom(ctx, out) {
				return nil
			}
			continue
		}
		polled, ok, err := s.poll(ctx, out)
		if err != nil {
			return err
		}
		// Records polled as the pipeline began to drain are tracked:
		// send them on, or keep them for the next Read.
		n, sent := s.send(out, polled)
		if !ok || !sent {
			return nil
		}
		if n == 0 && s.cfg.stopCaughtUp && s.fl.n.Load() == 0 && !s.redo.pending() {
			if s.tx != nil && s.tx.emittedAny() {
				// Nothing new to read and everything emitted is
				// settled: the epoch commits now, not at its time.
				if ok, err := s.closeEpoch(ctx, out.Flush); !ok || err != nil {
					return err
				}
				continue
			}
			if s.caughtUp(ctx) {
				return nil
			}
		}
	}
}

// polled is the records of one partition from one poll, tracked from seq
// first on.
type polled struct {
	p       *partition
	first   uint64
	recs    []*kgo.Record
	settled []bool // settled as tracked, not emitted (nil: none is)
}

// poll waits for records and tracks them; ok is false when the pipeline
// drains or stops (records may come with it all the same).
func (s *Source) poll(ctx context.Context, out *sluice.Emitter[Msg]) (_ []polled, ok bool, _ error) {
	var wait time.Duration
	if s.cfg.stopCaughtUp {
		wait = s.rd.idleWait()
	}
	if due, ok := s.redo.next(); ok {
		wait = max(time.Until(due), time.Millisecond)
	}
	if s.tx != nil {
		if _, left := s.tx.due(); left > 0 && (wait == 0 || left < wait) {
			wait = left
		}
	}
	pctx, ok := s.rd.begin(ctx, wait)
	if !ok {
		return nil, false, nil
	}
	var ps []polled
	var closed bool
	ok = out.Await(func() {
		fs := s.cl.PollRecords(pctx, s.fl.room())
		closed = fs.IsClientClosed()
		ps = s.track(fs)
		s.cl.AllowRebalance()
	})
	s.rd.end()
	if len(ps) > 0 {
		s.rd.idle = 0
	}
	if closed {
		return nil, false, fmt.Errorf("kafkax: source of group %q: client closed", s.group)
	}
	return ps, ok && ctx.Err() == nil, nil
}

// With StopWhenCaughtUp, a poll waits idleFirst for records after one
// that found some, doubling to idleCheck, before the reader asks whether
// the group is caught up (reader.idleWait).
const (
	idleFirst = 10 * time.Millisecond
	idleCheck = 250 * time.Millisecond
)

// track adds the records of fs to the trackers of their partitions. It
// runs before the client allows a rebalance after the poll
// (BlockRebalanceOnPoll), so a partition without a tracker was revoked or
// lost before the poll returned: its records are the new owner's, and are
// neither emitted nor tracked.
func (s *Source) track(fs kgo.Fetches) []polled {
	var out []polled
	fs.EachPartition(func(ftp kgo.FetchTopicPartition) {
		if ftp.Err != nil && !errors.Is(ftp.Err, context.DeadlineExceeded) && !errors.Is(ftp.Err, context.Canceled) {
			s.fetchErrs.Add(1)
		}
		if len(ftp.Records) == 0 {
			return
		}
		p := s.tr.get(ftp.Topic, ftp.Partition)
		if p == nil {
			return
		}
		recs, first, settled := p.track(ftp.Records, s.fl)
		before := p.deliveredBefore()
		for i, r := range recs {
			switch {
			case r.Attrs.IsControl():
			case settled != nil && settled[i]:
				s.skipped.Add(1)
			case r.Offset < before:
				s.redelivered.Add(1) // delivered before a restart, a rebalance or an abort
			}
		}
		if len(recs) > 0 {
			out = append(out, polled{p, first, recs, settled})
		}
	})
	return out
}

// send emits tracked records, but those of a partition that moved
// meanwhile (released: they are the new owner's) and those settled as
// they were tracked (control records, records the last commit recorded as
// settled). It returns how many it sent, and false when the pipeline
// drains or stopped: the records not sent stay tracked and unsettled, so
// no commit passes them, and the next Read emits them.
func (s *Source) send(out *sluice.Emitter[Msg], batches []polled) (sent int, ok bool) {
	s.rd.unsent = nil
	for k, b := range batches {
		if b.p.is(gone) {
			continue
		}
		// Counted before they are sent, since a record may be
		// acknowledged before Send returns; those not sent are
		// taken back.
		s.received.Add(int64(b.toEmit(0)))
		for i, rec := range b.recs {
			if b.settled != nil && b.settled[i] {
				continue
			}
			seq := b.first + uint64(i)
			delivery := int32(1)
			if s.tx != nil {
				var ok bool
				if delivery, ok = s.txnDelivery(b.p, seq, rec); !ok {
					continue // dead-lettered, or the run failed
				}
				s.tx.emitted()
			}
			if !out.Send(Msg{Receipt: s.receipt(b.p.slot<<seqBits|seq, rec), r: rec, delivery: delivery}) {
				if s.tx != nil {
					s.tx.unemitted()
				}
				s.received.Add(-int64(b.toEmit(i)))
				rest := polled{b.p, seq, b.recs[i:], nil}
				if b.settled != nil {
					rest.settled = b.settled[i:]
				}
				s.rd.unsent = append([]polled{rest}, batches[k+1:]...)
				return sent, false
			}
			sent++
		}
	}
	return sent, true
}

// toEmit counts the records of b from index i on that are to be emitted.
func (b polled) toEmit(i int) int {
	if b.settled == nil {
		return len(b.recs) - i
	}
	n := 0
	for _, done := range b.settled[i:] {
		if !done {
			n++
		}
	}
	return n
}

// sendRedeliveries emits the failed records whose delay has passed; false
// if the pipeline drains or stopped (those not sent are emitted by the
// next Read).
func (s *Source) sendRedeliveries(out *sluice.Emitter[Msg]) bool {
	due := s.redo.take(time.Now())
	for i, r := range due {
		if !out.Send(Msg{Receipt: s.receipt(r.p.slot<<seqBits|r.seq, r.rec), r: r.rec, delivery: r.delivery}) {
			for _, rest := range due[i:] {
				s.redo.add(rest)
			}
			return false
		}
		s.redelivered.Add(1)
	}
	return true
}

// waitForRoom pauses fetching until the flow has room again, a
// redelivery or a Transactional source's epoch is due or the run failed;
// false if the pipeline drains or stopped.
func (s *Source) waitForRoom(ctx context.Context, out *sluice.Emitter[Msg]) bool {
	resumed := s.fl.pause()
	s.cl.PauseFetchTopics(s.topics...)
	defer func() {
		s.cl.ResumeFetchTopics(s.topics...)
		resumed()
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for !s.fl.open() && s.failure() == nil {
		if due, ok := s.redo.next(); ok {
			if !due.After(time.Now()) {
				return true
			}
			timer.Reset(time.Until(due))
		}
		if s.tx != nil { // a due epoch closes at once (a Transactional source redelivers nothing itself)
			due, left := s.tx.due()
			if due {
				return true
			}
			if left > 0 {
				timer.Reset(left)
			}
		}
		stopped := false
		if !out.Await(func() {
			select {
			case <-s.fl.wake:
			case <-s.rd.kicks:
			case <-timer.C:
			case <-out.Done():
				stopped = true
			case <-ctx.Done():
				stopped = true
			}
		}) || stopped {
			return false
		}
	}
	return true
}
