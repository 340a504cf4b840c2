package kafkax

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
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
