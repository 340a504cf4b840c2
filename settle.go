package sluice

import (
	"context"
	"fmt"
	"sync/atomic"
)

// A Receipt settles one message taken from a broker: it is acknowledged
// once everything derived from it is stored, or failed with a cause. A
// connector's source hands one out with each message ([NewReceipt]); an
// item derived from the message carries it along by embedding it (or by
// any [Carrier]), and whoever stores the item settles it. The zero Receipt
// settles nothing.
//
// The engine settles what it decides on its own, so that no item that
// carries a receipt is left unsettled by a stage's policy:
//
//   - [ForEach] and [ForEachChunk] acknowledge every item once their
//     function has returned nil for it (after any [Retry]): a sink is a
//     write followed by a settle, for any connector's input;
//   - an item that [Filter] drops, that [SkipErrors] skips, or that an
//     [OnFull] policy discards is acknowledged: the stage decided it is
//     done;
//   - an item routed by [DeadLetter] travels in its [Failed] value, which
//     carries its receipts, and is acknowledged when the dead-letter
//     stream's sink has stored it;
//   - [FlatMap] holds the input's receipt for every result that carries a
//     receipt, and acknowledges the input's own hold when the call returns,
//     so the message is settled once every result is (at once if there is
//     none); [Broadcast] holds it once per extra copy.
//
// [Map] and [OrderedMap] settle nothing: a result carries its input's
// receipt when the function puts it there. A result that does not carry
// it lets the message go unsettled, and it is delivered again later by
// the broker: keep the receipt with the data until the data is stored.
// [Reduce], [Collect], [ToChan] and [ToSeq] hand items to the caller,
// who settles them. Items abandoned when a pipeline fails or is cancelled
// are not settled either; the broker delivers them again.
//
// A Receipt is one pointer; settling it costs an atomic operation, and the
// last settlement one call of the connector's [Settler]. It is safe for
// concurrent use. Settling a receipt more often than it is held, or after
// it failed, does nothing.
type Receipt struct{ t *ticket }

// ticket is the shared state of one message's receipt.
type ticket struct {
	holds atomic.Int32 // settlements still needed; ≤ 0 once settled
	to    Settler
	key   uint64
	trace context.Context // the message's trace context; nil for none
}

// failedHolds marks a ticket settled by Fail: no Ack can bring it back to 0.
const failedHolds = -1 << 30

// Settler is what a connector implements to learn how each of its
// messages was settled. Settle is called exactly once per [Receipt] made
// by [NewReceipt]: with a nil cause when every hold was acknowledged, or
// with the cause of the first [Receipt.Fail]. It may be called from any
// goroutine, so it must be safe for concurrent use; it should not block
// for long, since it runs on the goroutine that settled the message (a
// sink's worker, usually).
type Settler interface {
	Settle(key uint64, cause error)
}

// NewReceipt returns a receipt that reports to s, with key, once it is
// settled. It holds one settlement. Panics if s is nil.
func NewReceipt(s Settler, key uint64) Receipt {
	if s == nil {
		panic("sluice: NewReceipt: nil Settler")
	}
	t := &ticket{to: s, key: key}
	t.holds.Store(1)
	return Receipt{t}
}

// WithTrace attaches the trace context of r's message (a connector's
// source extracts it from the message's headers with a [Propagator]), so
// that the spans of every stage that handles an item derived from the
// message continue its trace. It carries values only: its deadline and
// cancellation are ignored. Call it before r is handed on; it returns r.
func (r Receipt) WithTrace(ctx context.Context) Receipt {
	if r.t != nil {
		r.t.trace = ctx
	}
	return r
}

// Trace returns the trace context attached by [Receipt.WithTrace], or nil.
func (r Receipt) Trace() context.Context {
	if r.t == nil {
		return nil
	}
	return r.t.trace
}

// IsZero reports whether r is the zero Receipt, which settles nothing.
func (r Receipt) IsZero() bool { return r.t == nil }

// Origin returns r itself, so that a type that embeds a Receipt is a
// [Carrier].
func (r Receipt) Origin() Receipt { return r }

// Ack settles one hold: the message counts as done once every hold is
// acknowledged (one, unless [Receipt.Expect] declared more).
func (r Receipt) Ack() {
	if t := r.t; t != nil && t.holds.Add(-1) == 0 {
		t.to.Settle(t.key, nil)
	}
}

// Fail settles the message as failed with cause at once, whatever holds
// remain; later settlements do nothing. What a failed message becomes is
// the connector's: delivered again by the broker, or dead-lettered after
// its last delivery (see the connector's documentation). Panics if cause
// is nil.
func (r Receipt) Fail(cause error) {
	if cause == nil {
		panic("sluice: Receipt.Fail: nil cause")
	}
	if t := r.t; t != nil && t.holds.Swap(failedHolds) > 0 {
		t.to.Settle(t.key, cause)
	}
}

// Expect declares that n results derived from the message will each
// settle it in place of the one settlement the caller holds: the message
// counts as done after n more Acks. Call it before handing any of the n
// results on. Expect(0) acknowledges the caller's hold. Panics if n < 0.
// [FlatMap] and [Broadcast] do this themselves.
func (r Receipt) Expect(n int) {
	if n < 0 {
		panic(fmt.Sprintf("sluice: Receipt.Expect: n must be ≥ 0, got %d", n))
	}
	t := r.t
	if t == nil {
		return
	}
	if n == 0 {
		r.Ack()
		return
	}
	r.hold(int32(n - 1))
}

// hold adds k holds unless the message is settled already.
func (r Receipt) hold(k int32) {
	t := r.t
	if t == nil || k == 0 {
		return
	}
	for {
		h := t.holds.Load()
		if h <= 0 || t.holds.CompareAndSwap(h, h+k) {
			return
		}
	}
}

// Carrier is implemented by an item that carries the receipt of the
// message it derives from; every type that embeds a [Receipt] is one. The
// engine settles an item's receipts when the item is a Carrier (through
// a pointer to it), a [Failed] one, or a slice or array of such items (a
// batch): a batch settles every receipt in it.
type Carrier interface {
	// Origin returns the receipt to settle; the zero Receipt for none.
	Origin() Receipt
}
