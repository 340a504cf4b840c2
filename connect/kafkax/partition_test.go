package kafkax

import (
	"slices"
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
	if _, _, st := p.track([]*kgo.Record{marker}, fl); len(st) != 1 || !st[0] || p.next.Offset != 4 || fl.n.Load() != 0 {
		t.Fatalf("after the marker: settled %v, next %d, flow %d; want [true], 4, 0", st, p.next.Offset, fl.n.Load())
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

// TestSettledRangesSurviveTheirEncoding: what a commit's metadata records
// reads back the same, and past metaMax only the ranges that fit are
// recorded (the lowest offsets first).
func TestSettledRangesSurviveTheirEncoding(t *testing.T) {
	rs := []offRange{{11, 11}, {13, 1012}, {5000, 5001}}
	meta := encodeSettled(10, 6000, rs)
	if got, before := decodeSettled(10, meta); !slices.Equal(got, rs) || before != 6000 {
		t.Fatalf("%q decodes to %v, delivered before %d; want %v, 6000", meta, got, before, rs)
	}
	if meta := encodeSettled(10, 25, nil); meta != metaTag+"d15" {
		t.Fatalf("nothing settled past 10, delivered to 24: %q", meta)
	} else if got, before := decodeSettled(10, meta); got != nil || before != 25 {
		t.Fatalf("%q decodes to %v, %d; want none, 25", meta, got, before)
	}
	if meta := encodeSettled(10, 10, nil); meta != "" {
		t.Fatalf("nothing settled or delivered past 10: %q; want none", meta)
	}
	for _, bad := range []string{"", "member-1", metaTag, metaTag + "d1;1+x", metaTag + "d1;-1+2", metaTag + "x;1+2", metaTag + "d-3", "sluice.settled.1:1+2"} {
		if got, before := decodeSettled(10, bad); got != nil || before != 10 {
			t.Fatalf("%q decodes to %v, %d; want none, 10", bad, got, before)
		}
	}
	if got, _ := decodeSettled(-1, meta); got != nil {
		t.Fatal("the metadata of no commit decodes to ranges")
	}
	var many []offRange
	for i := range int64(2000) { // every other offset settled
		many = append(many, offRange{100 + 2*i + 1, 100 + 2*i + 1})
	}
	meta = encodeSettled(100, 4101, many)
	got, _ := decodeSettled(100, meta)
	if len(meta) > metaMax || len(got) == 0 || len(got) == len(many) || !slices.Equal(got, many[:len(got)]) {
		t.Fatalf("%d ranges in %d bytes; want the first ones that fit in %d", len(got), len(meta), metaMax)
	}
}

// ranges returns the settled ranges of a commit's metadata.
func ranges(committed int64, meta string) []offRange {
	rs, _ := decodeSettled(committed, meta)
	return rs
}

// TestACommitRecordsWhatIsSettledPastThePrefix: with the first record
// open and the next 1000 settled, what is owed is the first record's
// offset with the 1000 in its metadata; a partition that takes that
// metadata tracks those records settled and emits only the others, and
// owes the ranges it has not fetched yet as well.
func TestACommitRecordsWhatIsSettledPastThePrefix(t *testing.T) {
	fl := newFlow(2000)
	p := newPartition("t", 0, 0)
	p.track(recs(0, 50, 1001), fl)
	for seq := uint64(1); seq <= 1000; seq++ {
		p.ack(seq)
	}
	c, ok := p.owed()
	if !ok || c.eo.Offset != 50 || !slices.Equal(ranges(50, c.meta), []offRange{{51, 1050}}) {
		t.Fatalf("owed %v %q %v; want offset 50 with 51-1050 settled", c.eo, c.meta, ok)
	}
	p.confirmCommit(c)
	if _, ok := p.owed(); ok {
		t.Fatal("a confirmed commit leaves it owed")
	}

	q := newPartition("t", 0, 1)
	q.skipSettled(decodeSettled(50, c.meta))
	kept, first, settled := q.track(recs(0, 50, 601), newFlow(2000))
	if len(kept) != 601 || first != 0 || q.open != 1 || settled[0] || !settled[1] || !settled[600] {
		t.Fatalf("tracked %d from %d, %d open; want 601 from 0, only offset 50 open", len(kept), first, q.open)
	}
	c, _ = q.owed()
	if got := ranges(c.eo.Offset, c.meta); c.eo.Offset != 50 || !slices.Equal(got, []offRange{{51, 1050}}) {
		t.Fatalf("the next owner owes %d with %v; want 50 with 51-1050 (fetched or not)", c.eo.Offset, got)
	}
	q.ack(0)
	if c, _ = q.owed(); c.eo.Offset != 651 || !slices.Equal(ranges(651, c.meta), []offRange{{651, 1050}}) {
		t.Fatalf("after its first record settled it owes %d with %q; want 651 with 651-1050", c.eo.Offset, c.meta)
	}
}
