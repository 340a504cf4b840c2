package kafkax

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// markDelay is how long a settlement that advanced a settled prefix waits
// for others before the prefixes are marked for franz-go to commit: marks
// are batched, not made per record.
const markDelay = 5 * time.Millisecond

// commitTimeout bounds a commit the tracker makes itself (on revoke, on
// reassignment, at Close).
const commitTimeout = 10 * time.Second

// tracker keeps the partitions of a source through the group's
// rebalances, and marks their settled prefixes for franz-go to commit
// (AutoCommitMarks): the client commits what is marked every CommitEvery
// interval, and the tracker commits what is marked when partitions are
// revoked and at Close.
//
// A partition the group takes away with a commit that succeeds is
// released: its records settle for nothing, and the flow stops counting
// them. A partition lost (franz-go reports that at a failed heartbeat,
// when a broker goes away) is held instead: its settlements still count,
// and when the group assigns it to this member again its settled prefix
// is committed before fetching resumes, which skips what is tracked
// already. A held partition assigned elsewhere is released.
type tracker struct {
	cl        *kgo.Client
	group     string
	onRelease func(p *partition, n int) // a partition's n open entries no longer count

	mu        sync.Mutex
	owned     map[topicPart]*partition
	held      map[topicPart]*partition
	abandoned []string                     // held partitions that went to another member with settled records not committed
	slots     atomic.Pointer[[]*partition] // every partition by slot, for Settle; appended to under mu

	armed  atomic.Bool // a mark is scheduled
	timer  *time.Timer
	markMu sync.Mutex // one mark at a time; Close waits for the last

	commits, commitErrs atomic.Int64
}

type topicPart struct {
	topic string
	part  int32
}

func newTracker(group string, onRelease func(*partition, int)) *tracker {
	t := &tracker{group: group, onRelease: onRelease,
		owned: make(map[topicPart]*partition), held: make(map[topicPart]*partition)}
	t.slots.Store(new([]*partition))
	t.timer = time.AfterFunc(time.Hour, t.mark)
	t.timer.Stop()
	return t
}

// lookup returns the partition of a receipt key and the record's seq, or
// nil for a key that no partition made.
func (t *tracker) lookup(key uint64) (*partition, uint64) {
	slots := *t.slots.Load()
	if i := key >> seqBits; i < uint64(len(slots)) {
		return slots[i], key & (1<<seqBits - 1)
	}
	return nil, 0
}

// get returns the partition of a fetched record while this member owns it.
func (t *tracker) get(topic string, part int32) *partition {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.owned[topicPart{topic, part}]
}

// advanced schedules a mark: a settled prefix moved.
func (t *tracker) advanced() {
	if !t.armed.Load() && t.armed.CompareAndSwap(false, true) {
		t.timer.Reset(markDelay)
	}
}

// mark marks the settled prefix of every owned partition that moved.
func (t *tracker) mark() {
	t.markMu.Lock()
	defer t.markMu.Unlock()
	t.armed.Store(false)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.markLocked(t.owned)
}

// markLocked marks the settled prefixes of parts that moved. Called with
// mu held, so that a partition is never marked once it is revoked.
func (t *tracker) markLocked(parts map[topicPart]*partition) {
	var offs map[string]map[int32]kgo.EpochOffset
	for _, p := range parts {
		eo, ok := p.toMark()
		if !ok {
			continue
		}
		if offs == nil {
			offs = make(map[string]map[int32]kgo.EpochOffset)
		}
		if offs[p.topic] == nil {
			offs[p.topic] = make(map[int32]kgo.EpochOffset)
		}
		offs[p.topic][p.part] = eo
	}
	if offs != nil {
		t.cl.MarkCommitOffsets(offs)
	}
}

// commitMarked marks what moved and commits what is marked; it waits for
// the commit.
func (t *tracker) commitMarked(ctx context.Context) error {
	t.mark()
	if len(t.cl.MarkedOffsets()) == 0 {
		return nil // everything marked is committed
	}
	ctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	return t.counted(t.cl.CommitMarkedOffsets(ctx))
}

// counted counts a commit's outcome and names the group in its error.
func (t *tracker) counted(err error) error {
	if err != nil {
		t.commitErrs.Add(1)
		return fmt.Errorf("kafkax: commit for group %q: %w", t.group, err)
	}
	t.commits.Add(1)
	return nil
}

// autoCommitted counts franz-go's periodic commits (AutoCommitCallback).
func (t *tracker) autoCommitted(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
	if err == nil {
		err = responseErr(resp)
	}
	_ = t.counted(err)
}

// responseErr returns the first partition error of a commit's response.
func responseErr(resp *kmsg.OffsetCommitResponse) error {
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return fmt.Errorf("topic %q partition %d: %w", rt.Topic, rp.Partition, err)
			}
		}
	}
	return nil
}

// assigned runs before franz-go fetches the group's offsets for the newly
// assigned partitions: a held one is owned again, and its settled prefix
// committed, so that fetching starts past it; held ones assigned to
// another member are released.
func (t *tracker) assigned(ctx context.Context, cl *kgo.Client, tps map[string][]int32) {
	t.mu.Lock()
	back := make(map[string]map[int32]kgo.EpochOffset)
	slots := slices.Clone(*t.slots.Load())
	for topic, ps := range tps {
		for _, part := range ps {
			k := topicPart{topic, part}
			if p := t.held[k]; p != nil {
				delete(t.held, k)
				p.setState(owned)
				t.owned[k] = p
				if eo, ok := p.toMark(); ok {
					if back[topic] == nil {
						back[topic] = make(map[int32]kgo.EpochOffset)
					}
					back[topic][part] = eo
				}
				continue
			}
			p := newPartition(topic, part, uint64(len(slots)))
			slots = append(slots, p)
			t.owned[k] = p
		}
	}
	t.slots.Store(&slots)
	elsewhere := slices.Collect(maps.Values(t.held))
	for _, p := range elsewhere {
		if eo, ok := p.uncommitted(); ok {
			t.abandoned = append(t.abandoned, fmt.Sprintf("%s/%d up to offset %d", p.topic, p.part, eo.Offset))
		}
	}
	clear(t.held)
	t.mu.Unlock()
	for _, p := range elsewhere {
		t.onRelease(p, p.release())
	}
	if len(back) > 0 {
		ctx, cancel := context.WithTimeout(ctx, commitTimeout)
		defer cancel()
		var cerr error
		cl.CommitOffsetsSync(ctx, back, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				err = responseErr(resp)
			}
			cerr = err
		})
		_ = t.counted(cerr)
	}
}

// take removes the partitions of tps from the owned ones.
func (t *tracker) take(tps map[string][]int32) []*partition {
	var out []*partition
	for topic, ps := range tps {
		for _, part := range ps {
			k := topicPart{topic, part}
			if p := t.owned[k]; p != nil {
				out = append(out, p)
				delete(t.owned, k)
			}
		}
	}
	return out
}

// revoked runs when the group takes partitions away: their settled
// prefixes are marked and committed before they move. If that commit
// fails (the coordinator is away), they are held, as if lost.
func (t *tracker) revoked(ctx context.Context, _ *kgo.Client, tps map[string][]int32) {
	t.mu.Lock()
	t.markLocked(t.owned)
	parts := t.take(tps)
	for _, p := range parts {
		p.setState(held) // nothing more is marked for them
	}
	t.mu.Unlock()
	if len(parts) == 0 {
		return
	}
	if err := t.commitMarked(ctx); err != nil {
		t.hold(parts)
		return
	}
	for _, p := range parts {
		t.onRelease(p, p.release())
	}
}

// lost runs when franz-go reports the partitions lost: the member was
// thrown out of the group, or could not reach it. They are held: what
// settles meanwhile is committed if they are assigned here again.
func (t *tracker) lost(_ context.Context, cl *kgo.Client, tps map[string][]int32) {
	committed := cl.CommittedOffsets()
	t.mu.Lock()
	parts := t.take(tps)
	t.mu.Unlock()
	for _, p := range parts {
		p.mu.Lock()
		if eo, ok := committed[p.topic][p.part]; ok {
			p.lastCommitted = eo.Offset
		}
		p.mu.Unlock()
	}
	t.hold(parts)
}

func (t *tracker) hold(parts []*partition) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range parts {
		p.setState(held)
		p.mu.Lock()
		p.marked = -1 // marked again when assigned again
		p.mu.Unlock()
		t.held[topicPart{p.topic, p.part}] = p
	}
}

// settledNotCommitted reports the partitions lost and not assigned back
// (held still, or gone to another member) whose settled records are not
// committed: their next owner processes those again.
func (t *tracker) settledNotCommitted() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	lost := slices.Clone(t.abandoned)
	for _, p := range t.held {
		if eo, ok := p.uncommitted(); ok {
			lost = append(lost, fmt.Sprintf("%s/%d up to offset %d", p.topic, p.part, eo.Offset))
		}
	}
	if len(lost) == 0 {
		return nil
	}
	sort.Strings(lost)
	return fmt.Errorf("kafkax: group %q: partitions lost and not assigned back, settled records not committed: %s",
		t.group, strings.Join(lost, ", "))
}

// busy reports whether a partition has records not settled, or a settled
// prefix not marked.
func (t *tracker) busy() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range []map[topicPart]*partition{t.owned, t.held} {
		for _, p := range m {
			if p.busy() {
				return true
			}
		}
	}
	return false
}

// stop cancels a scheduled mark and waits for a running one.
func (t *tracker) stop() {
	t.timer.Stop()
	t.markMu.Lock()
	t.markMu.Unlock() //nolint:staticcheck // waits for a running mark
}
