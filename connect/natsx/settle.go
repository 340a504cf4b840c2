package natsx

import (
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
func (s *Source) Settle(key uint64, cause error) { s.acks.settle(key, cause) }

// acker tracks a source's emitted messages until they are settled, and
// settles each with the server: an ack, a nak with the Redeliver delay, or,
// on its last delivery with a dead-letter subject, a dead letter and a
// term.
type acker struct {
	pending    pending // messages emitted and not settled, by receipt key
	maxDeliver int     // the consumer's MaxDeliver; ≤ 0 for no bound
	delay      time.Duration
	park       *parker // its subject is "" without DeadLetterTo
	n          *sourceCounts
	log        *sourceLog
}

// settle settles the message of key: see [Source.Settle].
func (a *acker) settle(key uint64, cause error) {
	m, ok := a.pending.take(key)
	if !ok {
		return // not a receipt of this source's emitted messages
	}
	if cause == nil {
		a.count(m.Ack(), &a.n.acked)
		return
	}
	a.n.failed.Add(1)
	md, err := m.Metadata()
	last := err == nil && a.maxDeliver > 0 && int(md.NumDelivered) >= a.maxDeliver
	if !last || a.park.subject == "" {
		a.nak(m, &a.n.requeued)
		return
	}
	a.deadLetter(m, md, cause)
}

// nak negatively acknowledges m with the Redeliver delay, counting it in
// c.
func (a *acker) nak(m jetstream.Msg, c *padded) {
	if d := a.delay; d > 0 {
		a.count(m.NakWithDelay(d), c)
	} else {
		a.count(m.Nak(), c)
	}
}

// handBack naks m at once: a message received but not processed when a
// run stops.
func (a *acker) handBack(m jetstream.Msg) { a.count(m.Nak(), &a.n.handedBack) }

// count adds one to c if err is nil, else to the settle errors.
func (a *acker) count(err error, c *padded) {
	if err != nil {
		a.n.settleErrs.Add(1)
		a.log.ackFailed(err)
		return
	}
	c.Add(1)
}

// deadLetter parks m on the dead-letter subject and terminates it. If the
// publish fails, m is naked: it was on its last delivery, so the server
// gives up on it, and its advisory dead-letters it later.
func (a *acker) deadLetter(m jetstream.Msg, md *jetstream.MsgMetadata, cause error) {
	// Restart m's AckWait, so that it is not delivered again while it is
	// being published.
	_ = m.InProgress()
	if err := a.park.failed(m, md, cause); err != nil {
		a.nak(m, &a.n.requeued)
		return
	}
	a.count(m.TermWithReason("parked on "+a.park.subject), &a.n.termed)
}
