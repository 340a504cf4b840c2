package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// ledger is a Settler that checks the settle contract: each receipt is
// settled once, with the cause expected, and only after every copy of
// what derives from it was stored.
type ledger struct {
	t      *testing.T
	mu     sync.Mutex
	stored map[uint64]int   // copies stored per key
	want   func(uint64) int // copies that must be stored before the settle
	calls  map[uint64]int
	causes map[uint64]error
}

func newLedger(t *testing.T, want func(uint64) int) *ledger {
	return &ledger{t: t, want: want, stored: map[uint64]int{}, calls: map[uint64]int{}, causes: map[uint64]error{}}
}

func (l *ledger) Settle(key uint64, cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls[key]++
	l.causes[key] = cause
	if got, want := l.stored[key], l.want(key); got != want {
		l.t.Errorf("message %d settled with %d of its %d copies stored", key, got, want)
	}
}

func (l *ledger) store(key uint64) {
	l.mu.Lock()
	l.stored[key]++
	l.mu.Unlock()
}

// check fails unless every one of n messages was settled exactly once,
// with a nil cause.
func (l *ledger) check(n int) {
	l.t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range uint64(n) {
		if c := l.calls[k]; c != 1 {
			l.t.Errorf("message %d settled %d times, want once", k, c)
		}
		if err := l.causes[k]; err != nil {
			l.t.Errorf("message %d failed with %v, want acknowledged", k, err)
		}
	}
}

// msg is an item that carries its message's receipt, as a connector's
// message or a user's derived type does.
type msg struct {
	sluice.Receipt
	key uint64
}

func msgs(l *ledger, n int) []msg {
	xs := make([]msg, n)
	for i := range xs {
		xs[i] = msg{sluice.NewReceipt(l, uint64(i)), uint64(i)}
	}
	return xs
}

func keep(_ context.Context, m msg) (msg, error) { return m, nil }

// settleRows are the stages the engine settles for: each builds a
// pipeline from src whose sinks call store for every item they write, and
// says how many copies of message k must be stored.
var settleRows = []struct {
	name  string
	want  func(k uint64) int
	build func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg))
}{
	{"Map→ForEach", one, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		sinkAll(p, sluice.Map(p, "stage", src, 4, keep), store)
	}},
	{"OrderedMap→ForEachChunk", one, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		out := sluice.OrderedMap(p, "stage", src, 4, keep)
		sluice.ForEachChunk(p, "sink", out, 2, func(_ context.Context, ms []msg) error {
			for _, m := range ms {
				store(m)
			}
			return nil
		})
	}},
	{"Filter drops", odd, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		sinkAll(p, sluice.Filter(p, "stage", src, 3, func(_ context.Context, m msg) (bool, error) { return m.key%2 == 0, nil }), store)
	}},
	{"FlatMap k%3 results", func(k uint64) int { return int(k % 3) }, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		out := sluice.FlatMap(p, "stage", src, 3, func(_ context.Context, m msg, emit func(msg) bool) error {
			for range m.key % 3 {
				if !emit(m) {
					return nil
				}
			}
			return nil
		})
		sinkAll(p, out, store)
	}},
	{"Broadcast to 3 sinks", func(uint64) int { return 3 }, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		for i, out := range sluice.Broadcast(p, "stage", src, 3) {
			sluice.ForEach(p, fmt.Sprint("sink-", i), out, 2, func(_ context.Context, m msg) error {
				store(m)
				return nil
			})
		}
	}},
	{"Partition and Merge", one, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		parts := sluice.Partition(p, "stage", src, 3, func(m msg) uint64 { return m.key })
		sinkAll(p, sluice.Merge(p, "merge", parts), store)
	}},
	{"Batch→ForEach of batches", one, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		b := sluice.Batch(p, "stage", src, 7, time.Millisecond)
		sluice.ForEach(p, "sink", b, 2, func(_ context.Context, ms []msg) error {
			for _, m := range ms {
				store(m)
			}
			return nil
		})
	}},
	{"SkipErrors", odd, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		out := sluice.Map(p, "stage", src, 2, evenOnly, sluice.SkipErrors())
		sinkAll(p, out, store)
	}},
	{"ForEach SkipErrors after Retry", odd, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		sluice.ForEach(p, "stage", src, 2, func(ctx context.Context, m msg) error {
			if _, err := evenOnly(ctx, m); err != nil {
				return err
			}
			store(m)
			return nil
		}, sluice.Retry(2, 0, 0), sluice.SkipErrors())
	}},
	{"ForEachChunk SkipErrors", func(uint64) int { return 0 }, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		sluice.ForEachChunk(p, "stage", src, 1, func(context.Context, []msg) error { return errOdd }, sluice.SkipErrors())
	}},
	{"ForEachChunk Gather", one, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		sluice.ForEachChunk(p, "sink", src, 2, func(_ context.Context, ms []msg) error {
			for _, m := range ms {
				store(m)
			}
			return nil
		}, sluice.Gather(50))
	}},
	{"ForEachChunk Gather of batches", one, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		b := sluice.Batch(p, "batch", src, 7, time.Millisecond)
		sluice.ForEachChunk(p, "sink", b, 2, func(_ context.Context, bs [][]msg) error {
			for _, ms := range bs {
				for _, m := range ms {
					store(m)
				}
			}
			return nil
		}, sluice.Gather(20))
	}},
	{"DeadLetter stored by its sink", one, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		var dead sluice.Stream[sluice.Failed[msg]]
		out := sluice.Map(p, "stage", src, 2, evenOnly, sluice.DeadLetter(&dead))
		sinkAll(p, out, store)
		sluice.ForEach(p, "dead-sink", dead, 1, func(_ context.Context, f sluice.Failed[msg]) error {
			store(f.Item)
			return nil
		})
	}},
	{"Filter DeadLetter of batches", one, func(p *sluice.Pipeline, src sluice.Stream[msg], store func(msg)) {
		var dead sluice.Stream[sluice.Failed[[]msg]]
		b := sluice.Batch(p, "batch", src, 5, time.Millisecond)
		out := sluice.Filter(p, "stage", b, 1, func(_ context.Context, ms []msg) (bool, error) {
			if ms[0].key%2 == 1 {
				return false, errOdd
			}
			return true, nil
		}, sluice.DeadLetter(&dead))
		sluice.ForEach(p, "sink", out, 1, func(_ context.Context, ms []msg) error {
			for _, m := range ms {
				store(m)
			}
			return nil
		})
		sluice.ForEach(p, "dead-sink", dead, 1, func(_ context.Context, f sluice.Failed[[]msg]) error {
			for _, m := range f.Item {
				store(m)
			}
			return nil
		})
	}},
}

var errOdd = errors.New("odd")

func one(uint64) int { return 1 }

func odd(k uint64) int {
	if k%2 == 1 {
		return 0
	}
	return 1
}

func evenOnly(_ context.Context, m msg) (msg, error) {
	if m.key%2 == 1 {
		return m, errOdd
	}
	return m, nil
}

// sinkAll ends a pipeline with a ForEach that stores every item.
func sinkAll(p *sluice.Pipeline, s sluice.Stream[msg], store func(msg)) {
	sluice.ForEach(p, "sink", s, 2, func(_ context.Context, m msg) error {
		store(m)
		return nil
	})
}

// TestEveryStageSettlesEachReceiptOnceAfterItIsStored runs the settle
// contract over every stage that moves, drops, copies, regroups or
// dead-letters items: after Wait each message is acknowledged exactly
// once, and never before every copy derived from it was stored.
func TestEveryStageSettlesEachReceiptOnceAfterItIsStored(t *testing.T) {
	const n = 3000
	for _, row := range settleRows {
		t.Run(row.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLedger(t, row.want)
				p := sluice.New(t.Context())
				row.build(p, sluice.FromSlice(p, "src", msgs(l, n)), func(m msg) { l.store(m.key) })
				if err := p.Wait(); err != nil {
					t.Fatalf("Wait: %v", err)
				}
				l.check(n)
			})
		})
	}
}

// TestOverflowPoliciesSettleWhatTheyDiscard checks that an item an OnFull
// policy discards is acknowledged, so its message does not wait forever.
func TestOverflowPoliciesSettleWhatTheyDiscard(t *testing.T) {
	for _, o := range []sluice.Overflow{sluice.DropNewest, sluice.DropOldest} {
		t.Run(o.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 2000
				var mu sync.Mutex
				stored := map[uint64]bool{}
				l := newLedger(t, func(k uint64) int {
					mu.Lock()
					defer mu.Unlock()
					if stored[k] {
						return 1
					}
					return 0
				})
				p := sluice.New(t.Context())
				src := sluice.FromSlice(p, "src", msgs(l, n))
				out := sluice.Map(p, "stage", src, 1, keep, sluice.OnFull(o), sluice.Buffer(4), sluice.Chunk(2))
				sluice.ForEach(p, "slow", out, 1, func(_ context.Context, m msg) error {
					time.Sleep(time.Millisecond)
					mu.Lock()
					stored[m.key] = true
					mu.Unlock()
					l.store(m.key)
					return nil
				})
				if err := p.Wait(); err != nil {
					t.Fatalf("Wait: %v", err)
				}
				l.check(n)
				if s := p.Stats(); s.Stages[1].Dropped == 0 {
					t.Fatalf("the test dropped nothing: %+v", s.Stages[1])
				}
			})
		})
	}
}

// TestMapThatDropsTheReceiptLeavesTheMessageUnsettled pins the documented
// limit: Map settles nothing, so a result that does not carry its input's
// receipt leaves the message for the broker to deliver again.
func TestMapThatDropsTheReceiptLeavesTheMessageUnsettled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger(t, one)
		p := sluice.New(t.Context())
		src := sluice.FromSlice(p, "src", msgs(l, 10))
		keys := sluice.Map(p, "stage", src, 1, func(_ context.Context, m msg) (uint64, error) { return m.key, nil })
		sluice.ForEach(p, "sink", keys, 1, func(context.Context, uint64) error { return nil })
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if len(l.calls) != 0 {
			t.Fatalf("got %d messages settled, want none", len(l.calls))
		}
	})
}

// TestAFailingPipelineSettlesNothingItDidNotStore checks that a sink whose
// write fails the pipeline acknowledges none of the items it failed on.
func TestAFailingPipelineSettlesNothingItDidNotStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLedger(t, one)
		p := sluice.New(t.Context())
		src := sluice.FromSlice(p, "src", msgs(l, 100))
		sluice.ForEach(p, "sink", src, 1, func(_ context.Context, m msg) error {
			if m.key == 50 {
				return errOdd
			}
			l.store(m.key)
			return nil
		})
		if err := p.Wait(); !errors.Is(err, errOdd) {
			t.Fatalf("Wait: got %v, want errOdd", err)
		}
		if l.calls[50] != 0 {
			t.Fatal("the failed message was settled")
		}
		if len(l.calls) != 50 {
			t.Fatalf("got %d messages settled, want the 50 stored before the failure", len(l.calls))
		}
	})
}

// TestReceiptSettlesOnce checks Ack, Expect and Fail on their own: the
// settler hears of a message once, after its last hold, or at its first
// Fail; later settlements do nothing; the zero Receipt settles nothing.
func TestReceiptSettlesOnce(t *testing.T) {
	rec := &recordingSettler{}
	a := sluice.NewReceipt(rec, 1)
	a.Expect(3)
	a.Ack()
	a.Ack()
	if got := rec.get(); len(got) != 0 {
		t.Fatalf("settled after 2 of 3 holds: %v", got)
	}
	a.Ack()
	a.Ack() // one too many: nothing
	b := sluice.NewReceipt(rec, 2)
	b.Expect(2)
	b.Ack()
	b.Fail(errOdd)
	b.Ack()
	b.Fail(errors.New("again"))
	c := sluice.NewReceipt(rec, 3)
	c.Expect(0)
	var zero sluice.Receipt
	zero.Ack()
	zero.Fail(errOdd)
	zero.Expect(2)
	if !zero.IsZero() || c.IsZero() {
		t.Fatal("IsZero is wrong")
	}
	want := "1:<nil> 2:odd 3:<nil>"
	if got := rec.get(); fmt.Sprint(got) != "["+want+"]" {
		t.Fatalf("got settlements %v, want [%s]", got, want)
	}
}

// TestReceiptIsSafeForConcurrentSettles races many holders of one receipt.
func TestReceiptIsSafeForConcurrentSettles(t *testing.T) {
	rec := &recordingSettler{}
	for k := range uint64(100) {
		r := sluice.NewReceipt(rec, k)
		r.Expect(8)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(r.Ack)
		}
		wg.Wait()
	}
	if got := len(rec.get()); got != 100 {
		t.Fatalf("got %d settlements, want 100", got)
	}
}

func TestReceiptMisusePanics(t *testing.T) {
	mustPanic(t, func() { sluice.NewReceipt(nil, 1) }, "sluice: NewReceipt", "nil Settler")
	r := sluice.NewReceipt(&recordingSettler{}, 1)
	mustPanic(t, func() { r.Expect(-1) }, "sluice: Receipt.Expect", "-1")
	mustPanic(t, func() { r.Fail(nil) }, "sluice: Receipt.Fail", "nil cause")
}

type recordingSettler struct {
	mu  sync.Mutex
	got []string
}

func (r *recordingSettler) Settle(key uint64, cause error) {
	r.mu.Lock()
	r.got = append(r.got, fmt.Sprintf("%d:%v", key, cause))
	r.mu.Unlock()
}

func (r *recordingSettler) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// printSettler stands in for a connector: it prints each settlement.
type printSettler struct{}

func (printSettler) Settle(key uint64, cause error) { fmt.Println("settled", key, cause) }

// A connector hands out each message with a receipt; a derived item
// carries it by embedding it, and the engine settles it: Filter
// acknowledges what it drops, ForEach what it has stored.
func ExampleReceipt() {
	type event struct {
		sluice.Receipt
		n int
	}
	var in []event
	for k := range 3 {
		in = append(in, event{sluice.NewReceipt(printSettler{}, uint64(k)), k})
	}
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "read", in)
	big := sluice.Filter(p, "big", src, 1, func(_ context.Context, e event) (bool, error) { return e.n > 0, nil })
	sluice.ForEach(p, "store", big, 1, func(_ context.Context, e event) error {
		fmt.Println("stored", e.n)
		return nil
	})
	if err := p.Wait(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// settled 0 <nil>
	// stored 1
	// settled 1 <nil>
	// stored 2
	// settled 2 <nil>
}
