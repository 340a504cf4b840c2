package brokers

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Records returns the records of topic from its start up to the end
// offsets it has when called, partition by partition, each partition's
// in order.
func Records(ctx context.Context, brokers, topic string) ([]*kgo.Record, error) {
	adm, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...))
	if err != nil {
		return nil, err
	}
	ends, err := kadm.NewClient(adm).ListEndOffsets(ctx, topic)
	adm.Close()
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", topic, err)
	}
	left := map[int32]int64{} // partition → its end, while records are due
	start := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
			start[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(left) == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: start}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return recs, fmt.Errorf("reading %s: %w (%d partitions short of their end)", topic, err, len(left))
		}
		for _, r := range fs.Records() {
			if end, ok := left[r.Partition]; ok && r.Offset < end {
				recs = append(recs, r)
				if r.Offset+1 >= end {
					delete(left, r.Partition)
				}
			}
		}
	}
	return recs, nil
}
