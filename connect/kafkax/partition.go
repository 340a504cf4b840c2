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
	marked    int64           // offset last marked for franz-go to commit; -1 for none
	last      int64           // offset of the last record tracked; -1 for none
	open      int             // entries not settled, counted in the source's flow
	state     partState
	// reassigned is set when the group gives the partition back to this
	// member, and cleared by its first fetch: franz-go resets its marks
	// to the group's offsets, which it fetches after OnPartitionsAssigned,
	// so what was marked meanwhile is marked again after that fetch.
	reassigned bool
}

// partState is where a partition stands with the group.
type partState uint8

const (
	owned partState = iota // assigned to this member: fetched, emitted, marked, committed
	held                   // lost, or revoked while a commit failed: settlements count, nothing is marked or committed until it is assigned again
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
	return &partition{topic: topic, part: part, slot: slot, next: kgo.EpochOffset{Offset: -1}, committed: -1, marked: -1, last: -1}
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
// last commit). It returns the records to emit, the seq of the first, and
// whether the settled prefix advanced (a transaction's commit marker is
// settled as it is tracked). Control records are tracked, settled, and
// returned, so that seqs stay contiguous; the caller does not emit them.
// The first fetch after the partition was assigned again reports the
// prefix advanced as well, so that it is marked again.
func (p *partition) track(recs []*kgo.Record, fl *flow) (kept []*kgo.Record, first uint64, advanced bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != owned {
		return nil, 0, false
	}
	if p.reassigned {
		// The first fetch since the partition came back: franz-go
		// fetched the group's offsets, and forgot the marks made
		// before. The caller has the tracker mark again.
		p.reassigned, p.marked, advanced = false, -1, true
	}
	for len(recs) > 0 && recs[0].Offset <= p.last {
		recs = recs[1:]
	}
	if len(recs) == 0 {
		return nil, 0, advanced
	}
	first = p.head + uint64(len(p.entries))
	control := false
	if c := cap(p.entries); c < len(p.entries)+len(recs) {
		p.entries = append(make([]entry, 0, max(2*c, len(p.entries)+len(recs))), p.entries...)
		p.base = p.entries[:0]
	}
	for _, r := range recs {
		c := r.Attrs.IsControl()
		control = control || c
		p.entries = append(p.entries, entry{rec: r, deliveries: 1, settled: c})
		if !c {
			p.open++
			fl.add(1)
		}
	}
	p.last = recs[len(recs)-1].Offset
	if control && p.advance() {
		advanced = true
	}
	return recs, first, advanced
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

// toMark returns the offset to mark if the settled prefix is past what
// was marked and what the group committed, and records it as marked.
func (p *partition) toMark() (kgo.EpochOffset, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != owned || p.next.Offset <= max(p.marked, p.committed) {
		return kgo.EpochOffset{}, false
	}
	p.marked = p.next.Offset
	return p.next, true
}

// owed returns the settled prefix when no commit is known to cover it.
func (p *partition) owed() (kgo.EpochOffset, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next, p.state != gone && p.next.Offset > p.committed
}

// confirm records that the group committed offset.
func (p *partition) confirm(offset int64) {
	p.mu.Lock()
	p.committed = max(p.committed, offset)
	p.mu.Unlock()
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
