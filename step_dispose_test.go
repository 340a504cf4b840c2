package sluice

import (
	"errors"
	"testing"
)

type countingSettler struct{ acks, fails int }

func (c *countingSettler) Settle(_ uint64, cause error) {
	if cause == nil {
		c.acks++
	} else {
		c.fails++
	}
}

type carried struct {
	Receipt
	n int
}

// SkipErrors' dispose acknowledges the skipped item's receipts and counts
// it as failed; DeadLetter's hands on a Failed item that carries them, with
// the attempts the error says were made.
func TestDisposeSkipsOrDeadLettersAFailedItem(t *testing.T) {
	bad := errors.New("bad")
	t.Run("skip", func(t *testing.T) {
		p := New(t.Context())
		defer p.cancel(nil)
		s := newStage(p, kindForEach, "f", 1)
		d := newDispose[carried](p, s, 1, callConfig{skip: true})
		ds := d.worker(0, s.workers[0])
		var st countingSettler
		v := carried{NewReceipt(&st, 1), 1}
		if err := ds.dispose(&v, bad); err != errDisposed || st.acks != 1 || st.fails != 0 || s.workers[0].failed.Load() != 1 {
			t.Fatalf("dispose returned %v; acks %d, fails %d, failed %d; want errDisposed, the receipt acknowledged, one failed",
				err, st.acks, st.fails, s.workers[0].failed.Load())
		}
		if ds.sends() {
			t.Fatal("a skipping dispose step says it sends dead letters")
		}
	})
	t.Run("dead letter", func(t *testing.T) {
		p := New(t.Context())
		defer p.cancel(nil)
		s := newStage(p, kindMap, "m", 1)
		var dead Stream[Failed[carried]]
		d := newDispose[carried](p, s, 1, callConfig{dead: &dead})
		sink := newStage(p, kindForEach, "dead", 1)
		e := consume(p, sink, dead, 1)
		ds := d.worker(0, s.workers[0])
		var st countingSettler
		v := carried{NewReceipt(&st, 1), 1}
		if err := ds.dispose(&v, &retryError{attempts: 3, exhausted: true, err: bad}); err != errDisposed || !ds.flush() {
			t.Fatalf("dispose returned %v; want errDisposed", err)
		}
		c := <-e.ch
		f := c.items[0]
		if len(c.items) != 1 || f.Item.n != 1 || f.Attempts != 3 || f.Stage != "m" || !errors.Is(f.Err, bad) || st.acks+st.fails != 0 {
			t.Fatalf("dead letters %+v, settled %d; want item 1 after 3 attempts, its receipt not settled yet", c.items, st.acks+st.fails)
		}
		f.settleAll(ack)
		if st.acks != 1 {
			t.Fatalf("the dead letter's sink settled %d; want its receipt acknowledged once", st.acks)
		}
	})
}
