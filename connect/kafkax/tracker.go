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
)

// markDelay is how long a settlement that advanced a settled prefix waits
// for others before the prefixes are marked for franz-go to commit: marks
// are batched, not made per record.
const markDelay = 5 * time.Millisecond

// commitTimeout bounds a commit the tracker makes itself (on revoke, on
// reassignment, when caught up, at Close).
const commitTimeout = 10 * time.Second

// tracker keeps the partitions of a source through the group's
// rebalances, and sees that their settled prefixes are committed.
//
// A settled prefix is owed until a commit of it succeeds: the tracker
// learns of each commit from its answer (franz-go's AutoCommitCallback, or
// the callback of a commit it makes itself), never from handing an offset
// to franz-go. Between commits the tracker marks the prefixes for franz-go
// (AutoCommitMarks), which commits what is marked every CommitEvery
// interval. franz-go forgets the marks of a partition when it is lost or
// revoked, and when the group assigns it again (it resets them to the
// group's offsets, which it fetches after OnPartitionsAssigned): a
// partition is marked again at its first fetch after an assignment. When
// partitions are revoked or assigned back, when the source asks whether
// it is caught up, and at Close, the tracker commits what is owed itself,
// with the offsets in hand, and waits for the answer.
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

// mark marks the settled prefix of every owned partition that moved past
// what was marked and committed.
func (t *tracker) mark() {
	t.markMu.Lock()
	defer t.markMu.Unlock()
	t.armed.Store(false)
	t.mu.Lock()
	defer t.mu.Unlock()
	var offs map[string]map[int32]kgo.EpochOffset
	for _, p := range t.owned {
		if eo, ok := p.toMark(); ok {
			offs = addOffset(offs, p, eo)
		}
	}
	// Under mu, so that a partition is never marked once it is revoked.
	if offs != nil {
		t.cl.MarkCommitOffsets(offs)
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
				p.mu.Lock()
				p.state, p.reassigned = owned, true
				p.mu.Unlock()
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
	// What this commit misses stays owed: marked after the first
	// fetch, committed by franz-go or by the tracker later.
	_, _ = t.commit(ctx, back)
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
		p.setState(held) // nothing more is marked for them
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
		p.mu.Lock()
		p.marked = -1 // marked again when assigned again
		p.mu.Unlock()
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
		if eo, ok := p.owed(); ok {
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

// stop cancels a scheduled mark and waits for a running one.
func (t *tracker) stop() {
	t.timer.Stop()
	t.markMu.Lock()
	t.markMu.Unlock() //nolint:staticcheck // waits for a running mark
}
