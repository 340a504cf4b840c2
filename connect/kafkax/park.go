package kafkax

import (
	"fmt"

	"github.com/sluicehq/sluice"
)

var (
	_ sluice.Parker          = (*Source)(nil)
	_ sluice.Partitioned     = (*Source)(nil)
	_ sluice.PartitionLister = (*Source)(nil)
)

// Partitions implements sluice.PartitionLister: the partitions this
// member owns now, as PartitionOf names them.
func (s *Source) Partitions() []uint64 {
	parts := s.tr.ownedParts()
	ids := make([]uint64, len(parts))
	for i, p := range parts {
		ids[i] = p.slot
	}
	return ids
}

// A window stage of the core (sluice.Window) holds the receipts of the
// records it folded until the windows are emitted and stored: at 20,000
// records a second, a one-second window holds 20,000, twice the default
// MaxInFlight. So the source implements sluice.Parker: a record held by a
// window is parked — it no longer counts against MaxInFlight, and the
// reader goes on fetching — while its entry stays in its partition's
// tracker, so the committed offset still never passes it. A parked
// record costs its tracker entry (16 bytes) and the *kgo.Record it keeps
// for redelivery. A parked record that fails counts in flight again.
// The source also implements sluice.Partitioned, so that the window's
// watermark is kept per Kafka partition.

// PartitionOf implements sluice.Partitioned: the partition of a receipt
// key is its slot (the high bits of the key).
func (s *Source) PartitionOf(key uint64) uint64 { return key >> seqBits }

// PartitionName implements sluice.Partitioned: "topic[partition]".
func (s *Source) PartitionName(id uint64) string {
	if slots := *s.tr.slots.Load(); id < uint64(len(slots)) {
		p := slots[id]
		return fmt.Sprintf("%s[%d]", p.topic, p.part)
	}
	return fmt.Sprintf("slot %d", id)
}

// Park implements sluice.Parker: the record of key is held by a window
// and no longer counts against MaxInFlight.
func (s *Source) Park(key uint64) {
	if s.tx != nil {
		s.fail(errTxnWindow)
		return
	}
	if p, seq := s.tr.lookup(key); p != nil && p.park(seq) {
		s.fl.done(1)
	}
}

// park marks the open entry of seq parked; false if it was not open or
// parked already.
func (p *partition) park(seq uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entry(seq)
	if e == nil || e.settled || e.parked || p.state == gone {
		return false
	}
	e.parked = true
	p.open--
	return true
}

// unpark undoes park for an entry that failed: it is emitted again, and
// counts in flight until it settles.
func (p *partition) unpark(seq uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entry(seq)
	if e == nil || e.settled || !e.parked || p.state == gone {
		return false
	}
	e.parked = false
	p.open++
	return true
}

// settle settles the entry of seq. It reports whether the entry was
// unsettled, whether it was parked, and whether the settled prefix
// advanced.
func (p *partition) settle(seq uint64) (wasOpen, wasParked, advanced bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.entry(seq)
	if e == nil || e.settled || p.state == gone {
		return false, false, false
	}
	e.settled = true
	p.gen++
	if e.parked {
		return true, true, p.advance()
	}
	p.open--
	return true, false, p.advance()
}

// parkedTo reports, for a partition this member owns whose unsettled
// records are all parked, the offset after its last record fetched: with
// StopWhenCaughtUp, a partition read to its end whose remaining records
// wait in a window is caught up (the window is emitted at the end of the
// input, and its records are committed as it is stored).
func (t *tracker) parkedTo(topic string, part int32) (int64, bool) {
	t.mu.Lock()
	p := t.owned[topicPart{topic, part}]
	t.mu.Unlock()
	if p == nil {
		return 0, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open > 0 || len(p.entries) == 0 {
		return 0, false
	}
	return p.last + 1, true
}
