package kafkax

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitTimeout bounds a commit the tracker makes itself (on revoke, on
// reassignment, when caught up, at Close).
const commitTimeout = 10 * time.Second

// tracker keeps the partitions of a source through the group's
// rebalances, and sees that their settled prefixes are committed.
//
// A settled prefix is owed until a commit of it succeeds: the tracker
// learns of each commit from its answer, never from asking for it. The
// tracker commits what is owed every CommitEvery interval (franz-go's own
// autocommit is off: its commits cannot carry metadata), and when
// partitions are revoked or assigned back, when the source asks whether it
// is caught up, and at Close, waiting for the answer each time. A commit
// carries, as metadata, the offsets settled past the prefix (settled.go);
// a partition newly assigned skips them (OnOffsetsFetched), so that a
// rebalance or a restart processes again only what was not settled.
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
	txn       bool                      // Transactional: commits happen in transactions (txn.go)
	onRelease func(p *partition, n int) // a partition's n open entries no longer count

	mu        sync.Mutex
	owned     map[topicPart]*partition
	held      map[topicPart]*partition
	abandoned []string                     // held partitions that went to another member with settled records not committed
	slots     atomic.Pointer[[]*partition] // every partition by slot, for Settle; appended to under mu

	stopLoop context.CancelFunc // ends the commit loop; nil until start
	loopDone chan struct{}      // closed when the commit loop returns

	commits, commitErrs atomic.Int64
	commitFailed        *tally // logs failed commits; nil: none
}

type topicPart struct {
	topic string
	part  int32
}

func newTracker(group string, onRelease func(*partition, int)) *tracker {
	t := &tracker{group: group, onRelease: onRelease,
		owned: make(map[topicPart]*partition), held: make(map[topicPart]*partition)}
	t.slots.Store(new([]*partition))
	t.loopDone = make(chan struct{})
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

// start starts the commit loop.
func (t *tracker) start(interval time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	t.stopLoop = cancel
	go t.commitEvery(ctx, interval)
}

// commitEvery commits what the owned partitions owe every interval until
// ctx ends (stop); a commit in flight then ends too. A failed commit is
// counted and logged (confirm); the next one carries what it held.
func (t *tracker) commitEvery(ctx context.Context, interval time.Duration) {
	defer close(t.loopDone)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			_ = t.commitOwned(ctx)
		case <-ctx.Done():
			return
		}
	}
}

func addOffset(offs map[string]map[int32]kgo.EpochOffset, p *partition, eo kgo.EpochOffset) map[string]map[int32]kgo.EpochOffset {
	if offs == nil {
		offs = make(map[string]map[int32]kgo.EpochOffset)
	}
	if offs[p.topic] == nil {
		offs[p.topic] = make(map[int32]kgo.EpochOffset)
	}
	offs[p.topic][p.part] = eo
	return offs
}

// ownedParts returns the partitions this member owns.
func (t *tracker) ownedParts() []*partition {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Collect(maps.Values(t.owned))
}

// assigned runs before franz-go fetches the group's offsets for the newly
// assigned partitions: a held one is owned again, and its settled prefix
// committed, so that fetching starts past it; held ones assigned to
// another member are released.
func (t *tracker) assigned(ctx context.Context, _ *kgo.Client, tps map[string][]int32) {
	t.mu.Lock()
	var back []*partition
	slots := slices.Clone(*t.slots.Load())
	for topic, ps := range tps {
		for _, part := range ps {
			k := topicPart{topic, part}
			if p := t.held[k]; p != nil {
				delete(t.held, k)
				p.setState(owned)
				t.owned[k] = p
				back = append(back, p)
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
		if eo, ok := p.owedWhileHeld(); ok {
			t.abandoned = append(t.abandoned, fmt.Sprintf("%s/%d up to offset %d", p.topic, p.part, eo.Offset))
		}
	}
	clear(t.held)
	t.mu.Unlock()
	for _, p := range elsewhere {
		t.onRelease(p, p.release())
	}
	// What this commit misses stays owed: the next commit carries it.
	_, _ = t.commit(ctx, back)
}

// offsetsFetched runs once franz-go has fetched the group's offsets for
// the partitions newly assigned, before it fetches their records: each
// partition that has tracked nothing skips the records its commit's
// metadata records as settled.
func (t *tracker) offsetsFetched(_ context.Context, _ *kgo.Client, resp *kmsg.OffsetFetchResponse) error {
	skip := func(topic string, part int32, offset int64, meta *string, code int16) {
		if code != 0 {
			return
		}
		if p := t.get(topic, part); p != nil && t.txn {
			p.fetchedCommit(offset, meta)
		}
		if meta == nil {
			return
		}
		if p := t.get(topic, part); p != nil {
			if rs := decodeSettled(offset, *meta); rs != nil {
				p.skipSettled(rs)
			}
		}
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			skip(rt.Topic, rp.Partition, rp.Offset, rp.Metadata, rp.ErrorCode)
		}
	}
	for _, g := range resp.Groups { // OffsetFetch v8 on
		for _, rt := range g.Topics {
			for _, rp := range rt.Partitions {
				skip(rt.Topic, rp.Partition, rp.Offset, rp.Metadata, rp.ErrorCode)
			}
		}
	}
	return nil
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
// prefixes (and those of the partitions that stay) are committed before
// they move. Those whose commit fails (the coordinator is away) are held,
// as if lost.
func (t *tracker) revoked(ctx context.Context, _ *kgo.Client, tps map[string][]int32) {
	t.mu.Lock()
	parts := t.take(tps)
	for _, p := range parts {
		p.setState(held) // nothing more is committed for them
	}
	staying := slices.Collect(maps.Values(t.owned))
	t.mu.Unlock()
	if len(parts) == 0 {
		return
	}
	failed, _ := t.commit(ctx, append(staying, parts...))
	var keep []*partition
	for _, p := range parts {
		if slices.Contains(failed, p) {
			keep = append(keep, p)
			continue
		}
		t.onRelease(p, p.release())
	}
	t.hold(keep)
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
		if eo, ok := committed[p.topic][p.part]; ok {
			p.confirm(eo.Offset)
		}
	}
	t.hold(parts)
}

func (t *tracker) hold(parts []*partition) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range parts {
		p.setState(held)
		t.held[topicPart{p.topic, p.part}] = p
	}
}

// settledNotCommitted reports the partitions whose settled records no
// commit covers: lost and not assigned back (held still, or gone to
// another member), whose next owner processes those again, and owned
// ones whose last commit failed.
func (t *tracker) settledNotCommitted() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	lost := slices.Clone(t.abandoned)
	for _, p := range t.held {
		if eo, ok := p.owedWhileHeld(); ok {
			lost = append(lost, fmt.Sprintf("%s/%d up to offset %d", p.topic, p.part, eo.Offset))
		}
	}
	var owed []string
	for _, p := range t.owned {
		if eo, ok := p.owedPrefix(); ok {
			owed = append(owed, fmt.Sprintf("%s/%d up to offset %d", p.topic, p.part, eo.Offset))
		}
	}
	var errs []error
	if len(lost) > 0 {
		sort.Strings(lost)
		errs = append(errs, fmt.Errorf("kafkax: group %q: partitions lost and not assigned back, settled records not committed: %s",
			t.group, strings.Join(lost, ", ")))
	}
	if len(owed) > 0 {
		sort.Strings(owed)
		errs = append(errs, fmt.Errorf("kafkax: group %q: settled records not committed: %s", t.group, strings.Join(owed, ", ")))
	}
	return errors.Join(errs...)
}

// busy reports whether a partition has records not settled, or a settled
// prefix no commit covers.
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

// stop ends the commit loop (a commit in flight is canceled) and waits
// for it, if it was started.
func (t *tracker) stop() {
	if t.stopLoop != nil {
		t.stopLoop()
		<-t.loopDone
	}
}
