package kafkax

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commit commits the settled prefix of each of parts that no commit
// covers, in one request, and waits for the answer (at most
// commitTimeout). It returns the partitions whose commit did not succeed
// and why; none when nothing was owed.
func (t *tracker) commit(ctx context.Context, parts []*partition) ([]*partition, error) {
	var offs map[string]map[int32]kgo.EpochOffset
	var owing []*partition
	var want []int64
	for _, p := range parts {
		if eo, ok := p.owed(); ok {
			offs = addOffset(offs, p, eo)
			owing = append(owing, p)
			want = append(want, eo.Offset)
		}
	}
	if len(owing) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	byKey := make(map[topicPart]*partition, len(owing))
	for _, p := range owing {
		byKey[topicPart{p.topic, p.part}] = p
	}
	var cerr error
	t.cl.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cerr = t.confirm(req, resp, err, func(k topicPart) *partition { return byKey[k] })
	})
	var failed []*partition
	for i, p := range owing {
		p.mu.Lock()
		if p.committed < want[i] {
			failed = append(failed, p)
		}
		p.mu.Unlock()
	}
	if len(failed) == 0 {
		return nil, nil
	}
	if cerr == nil {
		cerr = errors.New("the answer confirms no commit of them")
	}
	names := make([]string, len(failed))
	for i, p := range failed {
		names[i] = fmt.Sprintf("%s/%d", p.topic, p.part)
	}
	sort.Strings(names)
	return failed, fmt.Errorf("kafkax: commit for group %q of %s: %w", t.group, strings.Join(names, ", "), cerr)
}

// confirm records the offsets a commit's answer confirms in the
// partitions that find returns, counts the commit, and returns its error
// or its first partition's error.
func (t *tracker) confirm(req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error, find func(topicPart) *partition) error {
	if err == nil && resp != nil && req != nil {
		// Answers from OffsetCommit v10 on name topics by ID only.
		names := make(map[[16]byte]string, len(req.Topics))
		asked := make(map[topicPart]int64)
		for _, rt := range req.Topics {
			names[rt.TopicID] = rt.Topic
			for _, rp := range rt.Partitions {
				asked[topicPart{rt.Topic, rp.Partition}] = rp.Offset
			}
		}
		for _, rt := range resp.Topics {
			topic := rt.Topic
			if topic == "" {
				topic = names[rt.TopicID]
			}
			for _, rp := range rt.Partitions {
				if perr := kerr.ErrorForCode(rp.ErrorCode); perr != nil {
					if err == nil {
						err = fmt.Errorf("topic %q partition %d: %w", topic, rp.Partition, perr)
					}
					continue
				}
				k := topicPart{topic, rp.Partition}
				off, ok := asked[k]
				if !ok {
					continue
				}
				if p := find(k); p != nil {
					p.confirm(off)
				}
			}
		}
	}
	if err != nil {
		t.commitErrs.Add(1)
		t.commitFailed.add(1, err)
	} else {
		t.commits.Add(1)
	}
	return err
}

// autoCommitted records franz-go's periodic commits (AutoCommitCallback).
func (t *tracker) autoCommitted(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
	_ = t.confirm(req, resp, err, t.find)
}

// find returns the partition of k that this member owns or holds.
func (t *tracker) find(k topicPart) *partition {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.owned[k]; p != nil {
		return p
	}
	return t.held[k]
}

// commitOwned commits what the owned partitions owe.
func (t *tracker) commitOwned(ctx context.Context) error {
	_, err := t.commit(ctx, t.ownedParts())
	return err
}
