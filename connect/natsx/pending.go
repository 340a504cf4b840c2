package natsx

import (
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"
)

// pendingShards spreads the tracking table over locks, so that the
// reading goroutine and the settling ones seldom meet.
const pendingShards = 64

// pending tracks the messages emitted and not settled yet, by their
// receipts' keys. The reading goroutines add; the settling ones take.
type pending struct {
	next   atomic.Uint64
	n      atomic.Int64
	shards [pendingShards]pendingShard
}

type pendingShard struct {
	mu sync.Mutex
	m  map[uint64]jetstream.Msg
	_  [40]byte
}

// add tracks m and returns its key.
func (p *pending) add(m jetstream.Msg) uint64 {
	k := p.next.Add(1)
	sh := &p.shards[k%pendingShards]
	sh.mu.Lock()
	if sh.m == nil {
		sh.m = make(map[uint64]jetstream.Msg)
	}
	sh.m[k] = m
	sh.mu.Unlock()
	p.n.Add(1)
	return k
}

// take stops tracking the message of key and returns it.
func (p *pending) take(k uint64) (jetstream.Msg, bool) {
	sh := &p.shards[k%pendingShards]
	sh.mu.Lock()
	m, ok := sh.m[k]
	delete(sh.m, k)
	sh.mu.Unlock()
	if ok {
		p.n.Add(-1)
	}
	return m, ok
}

// get returns the message of key, still tracked.
func (p *pending) get(k uint64) (jetstream.Msg, bool) {
	sh := &p.shards[k%pendingShards]
	sh.mu.Lock()
	m, ok := sh.m[k]
	sh.mu.Unlock()
	return m, ok
}

// len returns how many messages are tracked.
func (p *pending) len() int64 { return p.n.Load() }
