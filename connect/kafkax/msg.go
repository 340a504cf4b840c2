package kafkax

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Msg is one record delivered by a [Source], with the handle that settles
// it. It is a small value (four words): carry it along with what is
// derived from it, and settle it once that result is committed — [Produce]
// does so for the [Out].From of every record the broker stored. The zero
// Msg is not a record; settling it does nothing.
type Msg struct {
	r       *kgo.Record
	p       *partition
	seq     uint64 // position of the record in its partition's tracker
	attempt int32  // 0 on the first delivery, counting re-emissions after Fail
}

// Record returns the franz-go record. It and its slices must not be
// modified.
func (m Msg) Record() *kgo.Record { return m.r }

// Value returns the record's value. It must not be modified.
func (m Msg) Value() []byte { return m.r.Value }

// Key returns the record's key. It must not be modified.
func (m Msg) Key() []byte { return m.r.Key }

// Topic returns the topic the record was read from.
func (m Msg) Topic() string { return m.r.Topic }

// Partition returns the partition the record was read from.
func (m Msg) Partition() int32 { return m.r.Partition }

// Offset returns the record's offset in its partition.
func (m Msg) Offset() int64 { return m.r.Offset }

// Attempt returns 1 on the record's first processing, 2 after one
// [Msg.Fail], and so on (see [Attempts]).
func (m Msg) Attempt() int { return int(m.attempt) + 1 }

// IsZero reports whether m is the zero Msg.
func (m Msg) IsZero() bool { return m.r == nil }

// ID returns "<topic>/<partition>/<offset>": the same every time the record
// is delivered, so it identifies duplicates downstream.
func (m Msg) ID() string {
	if m.r == nil {
		return ""
	}
	return m.r.Topic + "/" + strconv.Itoa(int(m.r.Partition)) + "/" + strconv.FormatInt(m.r.Offset, 10)
}

// Expect declares that n results derived from m will each settle it with
// [Msg.Ack] (n [Out] records with From: m, say): the record counts as
// settled, and may be committed, only after the n-th Ack. Call it before
// handing any of them on. Without Expect one Ack settles m. n = 0 settles
// m now (nothing derived from it needs committing, e.g. it was filtered
// out). Panics if n < 0.
func (m Msg) Expect(n int) {
	if n < 0 {
		panic(fmt.Sprintf("kafkax: Expect needs n ≥ 0, got %d", n))
	}
	if m.p == nil {
		return
	}
	if n == 0 {
		m.p.settle(m.seq, m.attempt, 1)
		return
	}
	m.p.mu.Lock()
	if e := m.p.entry(m.seq); e != nil && e.attempt == m.attempt && !e.settled {
		e.holds = int32(n)
	}
	m.p.mu.Unlock()
}

// Ack settles the record as done: once every record before it in its
// partition is settled too, its offset is committed with the next batch of
// commits ([CommitEvery]). Call it only once the result derived from the
// record is committed. Settling a record twice, or settling one of a
// partition this process no longer owns, does nothing: after a rebalance
// the partition's new owner processes what was not committed.
func (m Msg) Ack() {
	if m.p != nil {
		m.p.settle(m.seq, m.attempt, 1)
	}
}

// Fail reports that processing the record failed with cause. The source
// emits it again after the [Attempts] delay until it has failed on every
// attempt; then it goes to the dead-letter topic ([DeadLetter]) and is
// settled once stored there, or, without a dead-letter topic, the source
// fails the pipeline with an error naming the record (which is not
// committed). Its neighbours go on meanwhile: only the commit of its
// partition waits for it.
func (m Msg) Fail(cause error) {
	if m.p != nil {
		m.p.fail(m, cause)
	}
}

// partition tracks the records of one assigned partition, from the first
// one not yet committed past to the last one emitted, in fetch order. Its
// settled prefix is what may be committed.
type partition struct {
	src   *Source
	topic string
	part  int32

	mu        sync.Mutex
	head      uint64  // seq of entries[0]
	entries   []entry // emitted, and not yet part of the settled prefix
	next      int64   // offset to commit: after the settled prefix; -1 for none
	epoch     int32   // leader epoch of the record before next
	committed int64   // last offset committed; -1 for none by us
	gone      bool    // revoked or lost: nothing more is emitted or committed
}

type entry struct {
	offset  int64
	epoch   int32
	holds   int32 // Acks still needed
	attempt int32
	settled bool
}

func newPartition(s *Source, topic string, part int32) *partition {
	return &partition{src: s, topic: topic, part: part, next: -1, committed: -1}
}

// entry returns the entry of seq, or nil if it left the tracker already.
// Called with mu held.
func (p *partition) entry(seq uint64) *entry {
	if seq < p.head || seq-p.head >= uint64(len(p.entries)) {
		return nil
	}
	return &p.entries[seq-p.head]
}

// track adds the records of one fetch to the tracker and returns their
// first seq; ok is false if the partition is gone (the records must not be
// emitted).
func (p *partition) track(recs []*kgo.Record) (first uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return 0, false
	}
	first = p.head + uint64(len(p.entries))
	for _, r := range recs {
		p.entries = append(p.entries, entry{offset: r.Offset, epoch: r.LeaderEpoch, holds: 1})
	}
	return first, true
}

// settle takes k holds off the entry of seq if it is still on attempt, and
// when none remains marks it settled and advances the settled prefix.
func (p *partition) settle(seq uint64, attempt int32, k int32) {
	p.mu.Lock()
	e := p.entry(seq)
	if e == nil || e.settled || e.attempt != attempt {
		p.mu.Unlock()
		return
	}
	e.holds -= k
	if e.holds > 0 {
		p.mu.Unlock()
		return
	}
	e.settled = true
	n := 0
	for n < len(p.entries) && p.entries[n].settled {
		n++
	}
	if n > 0 {
		last := p.entries[n-1]
		p.next, p.epoch = last.offset+1, last.epoch
		// Slicing off the front keeps the array until append outgrows
		// it; then only the live entries are copied.
		p.entries = p.entries[n:]
		p.head += uint64(n)
		if len(p.entries) == 0 {
			p.entries = p.entries[:0:0]
		}
	}
	p.mu.Unlock()
	p.src.settled()
}

// fail moves the entry of m on to its next attempt, or past its last one.
func (p *partition) fail(m Msg, cause error) {
	s := p.src
	p.mu.Lock()
	e := p.entry(m.seq)
	if e == nil || e.settled || e.attempt != m.attempt {
		p.mu.Unlock()
		return
	}
	e.attempt++
	e.holds = 1
	gone := p.gone
	p.mu.Unlock()
	s.failedCount.Add(1)
	if gone {
		return // the new owner processes it again
	}
	next := Msg{r: m.r, p: p, seq: m.seq, attempt: m.attempt + 1}
	if int(next.attempt) < s.cfg.attempts {
		s.retry(next, time.Now().Add(s.cfg.retryDelay))
		return
	}
	if s.cfg.deadLetter == nil {
		s.fail(fmt.Errorf("kafkax: record %s failed %d attempts and no dead-letter topic is set: %w", m.ID(), next.attempt, cause))
		return
	}
	out := DeadLetterOut(m, s.cfg.deadTopic, cause)
	out.From = Msg{} // settled by the callback, on the attempt it is on now
	s.cfg.deadLetter.produceDead(s.runCtx(), out, func(err error) {
		if err != nil {
			s.fail(fmt.Errorf("kafkax: dead-lettering record %s to %q: %w", m.ID(), s.cfg.deadTopic, err))
			return
		}
		s.deadLettered.Add(1)
		next.Ack()
	})
}

// commitPoint returns the offset to commit if it is past what was
// committed. Called with mu held.
func (p *partition) commitPoint() (kgo.EpochOffset, bool) {
	if p.gone || p.next <= p.committed {
		return kgo.EpochOffset{}, false
	}
	return kgo.EpochOffset{Epoch: p.epoch, Offset: p.next}, true
}
