package kafkax

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRecordsPolledBeforeARevokeAreNotEmittedOrCommitted: franz-go may run
// OnPartitionsRevoked while the source holds records it has just polled
// (its callbacks run concurrently with polls and processing). Records of
// a partition revoked by then belong to the new owner: emitting them would
// give them a fresh tracker, and its commits would overwrite the new
// owner's offsets for a partition this member no longer has.
func TestRecordsPolledBeforeARevokeAreNotEmittedOrCommitted(t *testing.T) {
	s := &Source{
		group: "g", topics: []string{"t"}, cfg: sourceOptions(nil),
		parts: make(map[topicPart]*partition),
		wake:  make(chan struct{}, 1), commitCh: make(chan struct{}, 1), failCh: make(chan struct{}),
	}
	ctx := context.Background()
	s.assigned(ctx, nil, map[string][]int32{"t": {0, 1}})
	recs := func(part int32) []*kgo.Record {
		var rs []*kgo.Record
		for off := range int64(3) {
			rs = append(rs, &kgo.Record{Topic: "t", Partition: part, Offset: 10 + off})
		}
		return rs
	}
	// Polled while the member owned partitions 0 and 1 ...
	fs := kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "t", Partitions: []kgo.FetchPartition{
		{Partition: 0, Records: recs(0)}, {Partition: 1, Records: recs(1)},
	}}}}}
	// ... and partition 1 revoked before they were emitted.
	s.revoked(ctx, nil, map[string][]int32{"t": {1}})

	p := sluice.New(ctx)
	got := sluice.From(p, "read", func(_ context.Context, out *sluice.Emitter[Msg]) error {
		s.send(s.track(fs), out)
		return nil
	})
	var parts []int32
	sluice.ForEach(p, "collect", got, 1, func(_ context.Context, m Msg) error {
		parts = append(parts, m.Partition())
		m.Ack()
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, part := range parts {
		if part != 0 {
			t.Fatalf("emitted partitions %v; want only partition 0's records, 1 was revoked", parts)
		}
	}
	if len(parts) != 3 {
		t.Fatalf("emitted %d records; want partition 0's 3", len(parts))
	}
	s.mu.Lock()
	_, tracked := s.parts[topicPart{"t", 1}]
	s.mu.Unlock()
	if tracked {
		t.Fatal("the revoked partition got a tracker again: its settled records would be committed")
	}
	if n := s.inflight.Load(); n != 0 {
		t.Fatalf("%d records in flight after every emitted one was acked", n)
	}
}
