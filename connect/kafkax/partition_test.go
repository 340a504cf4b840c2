package kafkax

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func recs(part int32, from, n int64) []*kgo.Record {
	var rs []*kgo.Record
	for off := from; off < from+n; off++ {
		rs = append(rs, &kgo.Record{Topic: "t", Partition: part, Offset: off})
	}
	return rs
}

// TestSettledPrefixNeverPassesAnOpenRecord: records settled out of order
// move the commit point only over a contiguous settled prefix.
func TestSettledPrefixNeverPassesAnOpenRecord(t *testing.T) {
	fl := newFlow(100)
	p := newPartition("t", 0, 0)
	kept, first, _ := p.track(recs(0, 10, 4), fl)
	if len(kept) != 4 || first != 0 || fl.n.Load() != 4 {
		t.Fatalf("tracked %d from seq %d, flow %d; want 4 from 0, flow 4", len(kept), first, fl.n.Load())
	}
	for _, seq := range []uint64{1, 3} {
		if open, adv := p.ack(seq); !open || adv {
			t.Fatalf("ack %d: open %v advanced %v; want true, false", seq, open, adv)
		}
	}
	if p.next.Offset != -1 {
		t.Fatalf("next %d before the first record settled; want -1", p.next.Offset)
	}
	if _, adv := p.ack(0); !adv || p.next.Offset != 12 {
		t.Fatalf("after acking seq 0: advanced %v, next %d; want true, 12", adv, p.next.Offset)
	}
	if open, _ := p.ack(0); open {
		t.Fatal("a second ack of seq 0 counted")
	}
	if _, adv := p.ack(2); !adv || p.next.Offset != 14 || p.open != 0 {
		t.Fatalf("after acking all: next %d, open %d; want 14, 0", p.next.Offset, p.open)
	}
}

// TestATransactionMarkerIsSettledAsItIsTracked: a control record takes an
// offset but is never emitted, so the prefix passes it by itself.
func TestATransactionMarkerIsSettledAsItIsTracked(t *testing.T) {
	fl := newFlow(100)
	p := newPartition("t", 0, 0)
	rs := recs(0, 0, 3)
	marker := &kgo.Record{Topic: "t", Offset: 3}
	marker.Attrs = kgo.NewRecordAttrs(kgo.RecordAttrsOpts{Control: true})
	p.track(rs, fl)
	for seq := range uint64(3) {
		p.ack(seq)
		fl.done(1)
	}
	if _, _, adv := p.track([]*kgo.Record{marker}, fl); !adv || p.next.Offset != 4 || fl.n.Load() != 0 {
		t.Fatalf("after the marker: advanced %v, next %d, flow %d; want true, 4, 0", adv, p.next.Offset, fl.n.Load())
	}
}

// TestAReleasedPartitionTracksNothingAndItsOpenRecordsLeaveTheFlow: a
// partition that moved gives back every open record's place in the flow
// (one waiting for a redelivery included), and later settlements and
// fetches do nothing.
func TestAReleasedPartitionTracksNothingAndItsOpenRecordsLeaveTheFlow(t *testing.T) {
	fl := newFlow(100)
	p := newPartition("t", 0, 0)
	p.track(recs(0, 0, 5), fl)
	p.ack(0)
	fl.done(1)
	if n := p.release(); n != 4 {
		t.Fatalf("release gave back %d; want 4", n)
	}
	fl.done(4)
	if open, _ := p.ack(1); open || fl.n.Load() != 0 {
		t.Fatalf("an ack after release counted (flow %d)", fl.n.Load())
	}
	if kept, _, _ := p.track(recs(0, 5, 2), fl); len(kept) != 0 {
		t.Fatal("a released partition tracked new records")
	}
}

// TestAPartitionAssignedAgainSkipsWhatItTracked: after a loss, fetching
// restarts from the last commit; records tracked already are not tracked
// (nor emitted) twice.
func TestAPartitionAssignedAgainSkipsWhatItTracked(t *testing.T) {
	fl := newFlow(100)
	p := newPartition("t", 0, 0)
	p.track(recs(0, 0, 5), fl)
	kept, first, _ := p.track(recs(0, 2, 6), fl)
	if len(kept) != 3 || kept[0].Offset != 5 || first != 5 {
		t.Fatalf("re-fetch kept %d records from offset %d, seq %d; want 3 from 5, seq 5", len(kept), kept[0].Offset, first)
	}
}
