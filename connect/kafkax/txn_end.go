package kafkax

// An End that failed: was the transaction committed before its answer was
// lost, and how to leave it when the broker is away.

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// landed reports whether the group's committed offsets are those of
// owed, asked with RequireStable (the broker answers once no transaction
// of the group's offsets is pending): an End that failed after EndTxn
// committed — its answer lost — did commit the epoch. The caller has
// ended the transaction again with an abort first, so no transaction of
// this member is still open.
//
// A request that gets no answer is tried again, with a growing pause,
// for commitTimeout plus the transaction timeout; past that the error.
func (s *Source) landed(ctx context.Context, owed []owedCommit) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, commitTimeout+s.txnTimeout())
	defer cancel()
	pause := newBackoff()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = s.group
	req.RequireStable = true
	byTopic := make(map[string][]int32)
	for _, c := range owed {
		byTopic[c.p.topic] = append(byTopic[c.p.topic], c.p.part)
	}
	for topic, parts := range byTopic {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, parts
		req.Topics = append(req.Topics, rt)
	}
	var last error
	for pause.wait(ctx, last != nil) {
		resp, err := req.RequestWith(ctx, s.cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if last = err; err != nil {
			continue // no answer yet, or the coordinator moving or loading
		}
		got := make(map[topicPart]kmsg.OffsetFetchResponseTopicPartition)
		unstable := false
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if errors.Is(kerr.ErrorForCode(rp.ErrorCode), kerr.UnstableOffsetCommit) {
					unstable = true
				}
				got[topicPart{rt.Topic, rp.Partition}] = rp
			}
		}
		if unstable {
			last = kerr.UnstableOffsetCommit
			continue
		}
		for _, c := range owed {
			rp, ok := got[topicPart{c.p.topic, c.p.part}]
			if !ok || rp.Offset != c.eo.Offset || rp.Metadata == nil || *rp.Metadata != c.meta {
				return false, nil
			}
		}
		return true, nil
	}
	return false, errors.Join(last, ctx.Err())
}

// abortOpen ends a transaction whose End failed with an abort, trying
// again while the broker does not answer, until it does or ctx ends
// (false). franz-go stays in the transaction until an End succeeds, and
// the abort reinitialises the producer ID: it aborts the transaction if
// the broker still has it open and changes nothing if it committed.
func (s *Source) abortOpen(ctx context.Context) bool {
	pause := newBackoff()
	failed := false
	for pause.wait(ctx, failed) {
		err := s.cl.EndTransaction(ctx, kgo.TryAbort)
		if err == nil {
			return true
		}
		if !failed {
			s.tx.log.log(slog.LevelWarn, "transaction end retried", slog.String("transactional_id", s.tx.id), slog.String("cause", err.Error()))
		}
		failed = true
	}
	return false
}

// backoff paces retries: 50 ms after the first failure, doubling to 1 s.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 50 * time.Millisecond} }

// wait returns at once the first time or when the last try did not
// fail; after a failure it sleeps the next pause. It reports whether ctx
// is still live.
func (b *backoff) wait(ctx context.Context, failed bool) bool {
	if failed {
		t := time.NewTimer(b.d)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		b.d = min(2*b.d, time.Second)
	}
	return ctx.Err() == nil
}
