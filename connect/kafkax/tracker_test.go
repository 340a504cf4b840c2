package kafkax

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestALostPartitionKeepsCountingAndCloseNamesWhatItCouldNotCommit: a
// partition franz-go reports lost is held: settlements of its records
// still count, and when the group gives it to another member, what it
// settled and could not commit is reported (Close returns it).
func TestALostPartitionKeepsCountingAndCloseNamesWhatItCouldNotCommit(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1")) // never contacted
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fl := newFlow(100)
	released := 0
	tr := newTracker("g", func(_ *partition, n int) { released += n; fl.done(n) })
	defer tr.stop()
	tr.cl = cl
	ctx := context.Background()
	tr.assigned(ctx, cl, map[string][]int32{"t": {0, 1}})
	p := tr.get("t", 0)
	p.track(recs(0, 0, 3), fl)
	p.ack(0)
	p.ack(1)
	fl.done(2)

	tr.lost(ctx, cl, map[string][]int32{"t": {0, 1}})
	if tr.get("t", 0) != nil {
		t.Fatal("a lost partition is still owned")
	}
	if open, _ := p.ack(2); !open {
		t.Fatal("a settlement of a held partition did not count")
	}
	fl.done(1)
	if err := tr.settledNotCommitted(); err == nil || !strings.Contains(err.Error(), "t/0 up to offset 3") {
		t.Fatalf("got %v; want an error naming t/0 up to offset 3", err)
	}

	// The group gives partition 1 back, and 0 to another member.
	tr.assigned(ctx, cl, map[string][]int32{"t": {1}})
	if !p.is(gone) || tr.get("t", 1) == nil {
		t.Fatal("want partition 0 released, 1 owned again")
	}
	if err := tr.settledNotCommitted(); err == nil || !strings.Contains(err.Error(), "t/0 up to offset 3") {
		t.Fatalf("after the reassignment got %v; want the error still", err)
	}
	if fl.n.Load() != 0 || released != 0 {
		t.Fatalf("flow %d, released %d; want 0, 0 (every record was settled)", fl.n.Load(), released)
	}
}

// TestAPartitionLostAndGivenBackIsTheSameTracker: records fetched before
// the loss settle into the same prefix after the partition comes back.
func TestAPartitionLostAndGivenBackIsTheSameTracker(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tr := newTracker("g", func(*partition, int) {})
	defer tr.stop()
	tr.cl = cl
	ctx := context.Background()
	tr.assigned(ctx, cl, map[string][]int32{"t": {0}})
	p := tr.get("t", 0)
	tr.lost(ctx, cl, map[string][]int32{"t": {0}})
	tr.assigned(ctx, cl, map[string][]int32{"t": {0}})
	if tr.get("t", 0) != p || !p.is(owned) {
		t.Fatal("the partition came back with a new tracker")
	}
	if q, _ := tr.lookup(p.slot << seqBits); q != p {
		t.Fatal("its receipts no longer find it")
	}
}

// notInAGroup returns a tracker whose client is in no group: every commit
// it makes fails (franz-go answers "not a group").
func notInAGroup(t *testing.T) (*tracker, *kgo.Client) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1")) // never contacted
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	tr := newTracker("g", func(*partition, int) {})
	t.Cleanup(tr.stop)
	tr.cl = cl
	return tr, cl
}

// settledThree assigns t/0 and settles its offsets 0-2.
func settledThree(tr *tracker, cl *kgo.Client) *partition {
	tr.assigned(context.Background(), cl, map[string][]int32{"t": {0}})
	p := tr.get("t", 0)
	p.track(recs(0, 0, 3), newFlow(100))
	for seq := range uint64(3) {
		p.ack(seq)
	}
	return p
}

// commitAnswer is a commit of t/0 at offset and its answer, by topic ID
// only as OffsetCommit v10 answers.
func commitAnswer(offset int64, code int16) (*kmsg.OffsetCommitRequest, *kmsg.OffsetCommitResponse) {
	id := [16]byte{1}
	req := kmsg.NewPtrOffsetCommitRequest()
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = "t", id
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = 10
	st := kmsg.NewOffsetCommitResponseTopic()
	st.TopicID = id
	sp := kmsg.NewOffsetCommitResponseTopicPartition()
	sp.Partition, sp.ErrorCode = 0, code
	st.Partitions = append(st.Partitions, sp)
	resp.Topics = append(resp.Topics, st)
	return req, resp
}

// TestASettledPrefixIsOwedUntilACommitOfItIsConfirmed: an answer that
// confirms its commit makes a prefix committed; one with an error does
// not.
func TestASettledPrefixIsOwedUntilACommitOfItIsConfirmed(t *testing.T) {
	tr, cl := notInAGroup(t)
	p := settledThree(tr, cl)
	c, ok := p.owed()
	if !ok || c.eo.Offset != 3 {
		t.Fatalf("owed %v %v; want offset 3", c.eo, ok)
	}
	confirm := func(k topicPart, off int64) {
		if k == (topicPart{"t", 0}) && off == 3 {
			p.confirmCommit(c)
		}
	}
	req, resp := commitAnswer(3, kerr.RebalanceInProgress.Code)
	if err := tr.confirm(req, resp, nil, confirm); err == nil || !tr.busy() {
		t.Fatalf("a commit answered with an error counts as committed (error %v)", err)
	}
	req, resp = commitAnswer(3, 0)
	if err := tr.confirm(req, resp, nil, confirm); err != nil || tr.busy() {
		t.Fatalf("a confirmed commit of the whole prefix leaves it owed (error %v)", err)
	}
	if c, e := tr.commits.Load(), tr.commitErrs.Load(); c != 1 || e != 1 {
		t.Fatalf("%d commits, %d errors counted; want 1, 1", c, e)
	}
}

// TestARevokedPartitionWhoseCommitFailsIsHeldAndNamed: a partition revoked
// while its commit fails is held (its settlements count), and what it
// owes is reported, as Close reports it.
func TestARevokedPartitionWhoseCommitFailsIsHeldAndNamed(t *testing.T) {
	tr, cl := notInAGroup(t)
	p := settledThree(tr, cl)
	tr.revoked(context.Background(), cl, map[string][]int32{"t": {0}})
	if tr.get("t", 0) != nil || !p.is(held) {
		t.Fatal("want the revoked partition held, no longer owned")
	}
	if err := tr.settledNotCommitted(); err == nil || !strings.Contains(err.Error(), "t/0 up to offset 3") {
		t.Fatalf("got %v; want an error naming t/0 up to offset 3", err)
	}
}

// TestAnOwnedPartitionWhoseCommitFailsIsNamed: the commit the source makes
// (caught up, at Close) reports the partitions it could not commit, and
// they stay owed.
func TestAnOwnedPartitionWhoseCommitFailsIsNamed(t *testing.T) {
	tr, cl := notInAGroup(t)
	settledThree(tr, cl)
	if err := tr.commitOwned(context.Background()); err == nil || !strings.Contains(err.Error(), "t/0") {
		t.Fatalf("commit: got %v; want an error naming t/0", err)
	}
	if err := tr.settledNotCommitted(); err == nil || !strings.Contains(err.Error(), "settled records not committed: t/0 up to offset 3") {
		t.Fatalf("got %v; want an error naming t/0 up to offset 3", err)
	}
}

// TestAPartitionGivenBackStillOwesWhatItSettled: a partition lost and
// assigned back whose commit failed meanwhile owes its settled prefix,
// and a fetch of what it tracked already changes nothing.
func TestAPartitionGivenBackStillOwesWhatItSettled(t *testing.T) {
	tr, cl := notInAGroup(t)
	p := settledThree(tr, cl)
	tr.lost(context.Background(), cl, map[string][]int32{"t": {0}})
	tr.assigned(context.Background(), cl, map[string][]int32{"t": {0}})
	if c, ok := p.owed(); !ok || c.eo.Offset != 3 {
		t.Fatalf("owed %v %v after it came back; want offset 3", c.eo, ok)
	}
	if kept, _, _ := p.track(recs(0, 0, 3), newFlow(100)); len(kept) != 0 {
		t.Fatal("records tracked already are tracked again")
	}
}
