package kafkax

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// partition tracks the records of one partition that the source fetched,
// from the first one past the settled prefix to the last one fetched, in
// offset order. Its settled prefix — every record before next is settled —
// is what may be committed; records after it may settle in any order.
type partition struct {
	topic string
	part  int32
	slot  uint64 // the high bits of its records' receipt keys

	mu        sync.Mutex
	head      uint64          // seq of entries[0]
	entries   []entry         // fetched, and not yet part of the settled prefix
	base      []entry         // the array entries lives in, from its start
	next      kgo.EpochOffset // offset after the settled prefix; Offset -1 for none
	committed int64           // the group's commit as far as this member knows it; -1 for none
	last      int64           // offset of the last record tracked; -1 for none
	start     int64           // offset of the first record tracked; -1 for none
	open      int             // entries not settled, counted in the source's flow
	state     partState
	// skip holds the ranges of offsets past last that the group's commit
	// recorded as settled (see settled.go): records fetched in them are
	// tracked settled and not emitted.
	skip []offRange
	// before is the offset after the last record that the group's commit
	// records as delivered (by this member before a restart, or by
	// another): a record fetched below it is delivered again. -1 for none.
	before int64
	// gen counts changes of what is settled; metaGen is the gen of the
	// last commit confirmed, meta its metadata.
	gen, metaGen uint64
	meta         string
}

// partState is where a partition stands with the group.
type partState uint8

const (
	owned partState = iota // assigned to this member: fetched, emitted, committed
	held                   // lost, or revoked while a commit failed: settlements count, nothing is committed until it is assigned again
	gone                   // another member's: settlements do nothing
)

// entry is one fetched record.
type entry struct {
	rec        *kgo.Record
	deliveries int32 // times emitted
	settled    bool
	parked     bool // held by a window: not counted in open nor in the flow (park.go)
}

// seqBits is how many low bits of a receipt key hold the record's seq in
// its partition; the rest name the partition's slot.
const seqBits = 40

func newPartition(topic string, part int32, slot uint64) *partition {
	return &partition{topic: topic, part: part, slot: slot, next: kgo.EpochOffset{Offset: -1}, committed: -1, last: -1, start: -1, before: -1}
}

// entry returns the entry of seq, or nil if it left the tracker. Called
// with mu held.
func (p *partition) entry(seq uint64) *entry {
	if seq < p.head || seq-p.head >= uint64(len(p.entries)) {
		return nil
	}
	return &p.entries[seq-p.head]
}

// track adds the records of one fetch, skipping those tracked already (a
// partition assigned again after it was lost is fetched again from its
// last commit). It returns the records tracked, the seq of the first, and
// which of them are settled as they are tracked (nil when none is): a
// transaction's marker, and a record the group's last commit recorded as
// settled. Every record is tracked, so that seqs stay contiguous; the
// caller emits those not settled.
func (p *partition) track(recs []*kgo.Record, fl *flow) (kept []*kgo.Record, first uint64, settled []bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != owned {
		return nil, 0, nil
	}
	for len(recs) > 0 && recs[0].Offset <= p.last {
		recs = recs[1:]
	}
	if len(recs) == 0 {
		return nil, 0, nil
	}
	first = p.head + uint64(len(p.entries))
	if p.start < 0 {
		p.start = recs[0].Offset
	}
	if c := cap(p.entries); c < len(p.entries)+len(recs) {
		p.entries = append(make([]entry, 0, max(2*c, len(p.entries)+len(recs))), p.entries...)
		p.base = p.entries[:0]
	}
	for i, r := range recs {
		done := r.Attrs.IsControl() || p.skipped(r.Offset)
		if done {
			if settled == nil {
				settled = make([]bool, len(recs))
			}
			settled[i] = true
		}
		p.entries = append(p.entries, entry{rec: r, deliveries: 1, settled: done})
		if !done {
			p.open++
			fl.add(1)
		}
	}
	p.last = recs[len(recs)-1].Offset
	if settled != nil {
		p.gen++
		p.advance()
	}
	return recs, first, settled
}

// skipped reports whether offset lies in a range of skip, and drops the
// ranges before it. Offsets come in ascending order. Called with mu held.
func (p *partition) skipped(offset int64) bool {
	for len(p.skip) > 0 && p.skip[0].hi < offset {
		p.skip = p.skip[1:]
	}
	return len(p.skip) > 0 && p.skip[0].lo <= offset
}

// skipSettled makes the partition skip the records in rs, which the
// group's last commit recorded as settled, and count those below before
// as delivered again; only a partition that has tracked nothing yet takes
// them.
func (p *partition) skipSettled(rs []offRange, before int64) {
	p.mu.Lock()
	if p.last < 0 && len(p.entries) == 0 {
		p.skip, p.before = rs, before
	}
	p.mu.Unlock()
}

// deliveredBefore returns the offset below which a record was delivered
// before, by the partition's earlier owner or an aborted transaction.
func (p *partition) deliveredBefore() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.before
}

// ack settles the entry of seq. It reports whether the entry was open (the
// source's flow counts it no more) and whether the settled prefix
// advanced.
func (p *partition) ack(seq uint64) (wasOpen, advanced bool) {
	open, parked, advanced := p.settle(seq)
	return open && !parked, advanced
}

// failed returns the record of seq and how many times it was emitted, or
// false if it is no longer open here.
func (p *partition) failed(seq uint64) (*kgo.Record, int32, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entry(seq)
	if e == nil || e.settled || p.state == gone {
		return nil, 0, false
	}
	return e.rec, e.deliveries, true
}

// redelivered counts one more delivery of the entry of seq.
func (p *partition) redelivered(seq uint64) {
	p.mu.Lock()
	if e := p.entry(seq); e != nil {
		e.deliveries++
	}
	p.mu.Unlock()
}

// setDeliveries sets how often the entry of seq was emitted.
func (p *partition) setDeliveries(seq uint64, n int32) {
	p.mu.Lock()
	if e := p.entry(seq); e != nil {
		e.deliveries = n
	}
	p.mu.Unlock()
}

// advance drops the settled entries at the front and moves next past
// them. Called with mu held.
func (p *partition) advance() bool {
	n := 0
	for n < len(p.entries) && p.entries[n].settled {
		n++
	}
	if n == 0 {
		return false
	}
	r := p.entries[n-1].rec
	p.next = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset + 1}
	clear(p.entries[:n]) // the records may be collected
	// Slicing off the front keeps the array until append outgrows it;
	// then only the live entries are copied.
	p.entries = p.entries[n:]
	p.head += uint64(n)
	if len(p.entries) == 0 {
		p.entries = p.entries[:0:0]
	}
	return true
}

// release makes the partition another member's and returns how many open
// entries the source's flow no longer counts.
func (p *partition) release() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == gone {
		return 0
	}
	p.state = gone
	n := p.open
	p.open = 0
	p.entries, p.base = nil, nil // its receipts' slot stays; its records go
	return n
}

// setState sets the partition's state unless it is gone.
func (p *partition) setState(s partState) {
	p.mu.Lock()
	if p.state != gone {
		p.state = s
	}
	p.mu.Unlock()
}

// is reports whether the partition is in state s.
func (p *partition) is(s partState) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state == s
}

// owed returns what to commit when no confirmed commit covers what is
// settled: the offset after the settled prefix (or, when nothing is, of
// the first record tracked), and as metadata the ranges settled past it.
func (p *partition) owed() (c owedCommit, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == gone {
		return c, false
	}
	c = owedCommit{p: p, eo: p.next, gen: p.gen}
	if p.gen == p.metaGen && p.next.Offset <= p.committed {
		return c, false
	}
	rs := p.settledPast()
	if c.eo.Offset < 0 {
		if len(rs) == 0 || len(p.entries) == 0 {
			return c, false
		}
		r := p.entries[0].rec
		c.eo = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset}
	}
	c.meta = encodeSettled(c.eo.Offset, max(p.last+1, p.before), rs)
	return c, c.eo.Offset > p.committed || c.meta != p.meta
}

// fetchedCommit records the group's commit as fetched at assignment
// (Transactional: a rewind goes back to it).
func (p *partition) fetchedCommit(offset int64, meta *string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if offset < 0 || p.last >= 0 {
		return
	}
	p.committed, p.meta = offset, ""
	if meta != nil {
		p.meta = *meta
	}
}

// confirm records that the group committed offset.
func (p *partition) confirm(offset int64) {
	p.mu.Lock()
	p.committed = max(p.committed, offset)
	p.mu.Unlock()
}

// confirmCommit records that the group committed c, made by owed.
func (p *partition) confirmCommit(c owedCommit) {
	p.mu.Lock()
	if c.eo.Offset >= p.committed {
		p.committed, p.meta = c.eo.Offset, c.meta
		p.metaGen = max(p.metaGen, c.gen)
	}
	p.mu.Unlock()
}

// owedPrefix returns the settled prefix when no commit is known to cover
// it.
func (p *partition) owedPrefix() (kgo.EpochOffset, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next, p.state != gone && p.next.Offset > p.committed
}

// owedWhileHeld returns the settled prefix of a held partition when no
// commit covers it: what is processed again if the partition is not
// assigned here again.
func (p *partition) owedWhileHeld() (kgo.EpochOffset, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next, p.state == held && p.next.Offset > p.committed
}

// busy reports whether records are tracked and not settled, or settled
// and not committed.
func (p *partition) busy() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state != gone && (p.open > 0 || p.next.Offset > p.committed)
}
