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

// owedCommit is what one partition owes: the offset to commit, the
// metadata recording what is settled past it, and the partition's gen
// when they were taken.
type owedCommit struct {
	p    *partition
	eo   kgo.EpochOffset
	meta string
	gen  uint64
}

// commit commits what each of parts owes, in one request, and waits for
// the answer (at most commitTimeout). It returns the partitions whose
// commit did not succeed and why; none when nothing was owed.
func (t *tracker) commit(ctx context.Context, parts []*partition) ([]*partition, error) {
	var offs map[string]map[int32]kgo.EpochOffset
	byKey := make(map[topicPart]owedCommit)
	for _, p := range parts {
		if c, ok := p.owed(); ok {
			offs = addOffset(offs, p, c.eo)
			byKey[topicPart{p.topic, p.part}] = c
		}
	}
	if len(byKey) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	ctx = kgo.PreCommitFnContext(ctx, func(req *kmsg.OffsetCommitRequest) error {
		for i := range req.Topics {
			rt := &req.Topics[i]
			for j := range rt.Partitions {
				rp := &rt.Partitions[j]
				if c, ok := byKey[topicPart{rt.Topic, rp.Partition}]; ok {
					rp.Metadata = &c.meta
				}
			}
		}
		return nil
	})
	confirmed := make(map[*partition]bool, len(byKey))
	var cerr error
	t.cl.CommitOffsetsSync(ctx, offs, func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cerr = t.confirm(req, resp, err, func(k topicPart, off int64) {
			if c, ok := byKey[k]; ok && c.eo.Offset == off {
				c.p.confirmCommit(c)
				confirmed[c.p] = true
			}
		})
	})
	var failed []*partition
	for _, c := range byKey {
		if !confirmed[c.p] {
			failed = append(failed, c.p)
		}
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

// confirm passes each partition and offset a commit's answer confirms to
// ok, counts the commit, and returns its error or its first partition's
// error.
func (t *tracker) confirm(req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error, ok func(topicPart, int64)) error {
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
				if off, asked := asked[k]; asked {
					ok(k, off)
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

// commitOwned commits what the owned partitions owe.
func (t *tracker) commitOwned(ctx context.Context) error {
	_, err := t.commit(ctx, t.ownedParts())
	return err
}
