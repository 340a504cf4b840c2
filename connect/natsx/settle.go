package natsx

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Settle implements [sluice.Settler]: the core calls it once per emitted
// message, when the message's receipt is settled. A nil cause
// acknowledges the message. A cause naks it with the [Redeliver] delay
// while deliveries remain; on its last delivery it is dead-lettered
// ([DeadLetterTo]) and then terminated, or, without a dead-letter
// subject, naked all the same so that the server gives up on it and a
// run fails naming it (see [Read]).
//
// Acknowledgements, naks and terms are sent without waiting for the
// server's confirmation (no double ack): one lost on the way leaves the
// message to be delivered again after AckWait, a duplicate that
// at-least-once delivery allows and that stable output IDs ([Msg.ID])
// make harmless. So Settle does not block a sink's goroutine, which only
// acknowledges. Dead-lettering waits for the server to store the dead
// letter (one round trip, at most 5s) on the goroutine that called
// Receipt.Fail (the core never fails a receipt itself). Errors are
// counted ([SourceStats].SettleErrors); a lasting outage fails the run
// through [MaxOutage].
func (s *Source) Settle(key uint64, cause error) {
	m, ok := s.pending.take(key)
	if !ok {
		return // not a receipt of this source's emitted messages
	}
	if cause == nil {
		s.count(m.Ack(), &s.acked)
		return
	}
	s.failed.Add(1)
	md, err := m.Metadata()
	last := err == nil && s.maxDeliver > 0 && int(md.NumDelivered) >= s.maxDeliver
	if !last || s.cfg.deadSubject == "" {
		s.nak(m, &s.requeued)
		return
	}
	s.deadLetter(m, md, cause)
}

// nak negatively acknowledges m with the Redeliver delay, counting it in
// c.
func (s *Source) nak(m jetstream.Msg, c *padded) {
	if d := s.cfg.redeliverDelay; d > 0 {
		s.count(m.NakWithDelay(d), c)
	} else {
		s.count(m.Nak(), c)
	}
}

// handBack naks m at once: a message received but not processed when a
// run stops.
func (s *Source) handBack(m jetstream.Msg) { s.count(m.Nak(), &s.handedBack) }

// count adds one to c if err is nil, else to the settle errors.
func (s *Source) count(err error, c *padded) {
	if err != nil {
		s.settleErrs.Add(1)
		s.logAckFailed(err)
		return
	}
	c.Add(1)
}

// deadLetter publishes m to the dead-letter subject and terminates it. If
// the publish fails, m is naked: it was on its last delivery, so the
// server gives up on it, and its advisory dead-letters it later.
func (s *Source) deadLetter(m jetstream.Msg, md *jetstream.MsgMetadata, cause error) {
	// Restart m's AckWait, so that it is not delivered again while it is
	// being published.
	_ = m.InProgress()
	o := deadOut(m, md, s.cfg.deadSubject, s.stream, s.durable, cause.Error())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	seq, delivered := md.Sequence.Stream, md.NumDelivered
	if err := s.publishDead(ctx, o); err != nil {
		s.settleErrs.Add(1)
		s.logDeadFailed(seq, err)
		s.nak(m, &s.requeued)
		return
	}
	s.logDead(seq, delivered, cause.Error())
	s.count(m.TermWithReason("parked on "+s.cfg.deadSubject), &s.termed)
}

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
