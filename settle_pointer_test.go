package sluice_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice"
)

// pmsg is an item held by pointer: *pmsg is a Carrier through the
// embedded Receipt's promoted method.
type pmsg struct {
	sluice.Receipt
	v int
}

// countSettler counts settlements per cause.
type countSettler struct{ acked, failed atomic.Int64 }

func (s *countSettler) Settle(_ uint64, cause error) {
	if cause == nil {
		s.acked.Add(1)
	} else {
		s.failed.Add(1)
	}
}

var errFail = errors.New("fails")

func pmsgs(s sluice.Settler, n int) []*pmsg {
	ms := make([]*pmsg, n)
	for i := range ms {
		ms[i] = &pmsg{sluice.NewReceipt(s, uint64(i)), i}
	}
	return ms
}

// TestItemsHeldByPointerAreSettled checks every sink shape settles items
// whose pointer type is the Carrier: ForEach, ForEachChunk, a batch of
// pointers, and dead letters of pointers.
func TestItemsHeldByPointerAreSettled(t *testing.T) {
	const n = 200
	nop := func(context.Context, *pmsg) error { return nil }
	cases := map[string]func(p *sluice.Pipeline, src sluice.Stream[*pmsg]){
		"ForEach": func(p *sluice.Pipeline, src sluice.Stream[*pmsg]) {
			sluice.ForEach(p, "sink", src, 4, nop)
		},
		"ForEachChunk": func(p *sluice.Pipeline, src sluice.Stream[*pmsg]) {
			sluice.ForEachChunk(p, "sink", src, 2, func(context.Context, []*pmsg) error { return nil })
		},
		"Batch then ForEach": func(p *sluice.Pipeline, src sluice.Stream[*pmsg]) {
			b := sluice.Batch(p, "batch", src, 16, 0)
			sluice.ForEach(p, "sink", b, 2, func(context.Context, []*pmsg) error { return nil })
		},
		"DeadLetter": func(p *sluice.Pipeline, src sluice.Stream[*pmsg]) {
			var dead sluice.Stream[sluice.Failed[*pmsg]]
			sluice.ForEach(p, "sink", src, 4, func(context.Context, *pmsg) error { return errFail }, sluice.DeadLetter(&dead))
			sluice.ForEach(p, "dlq", dead, 1, func(context.Context, sluice.Failed[*pmsg]) error { return nil })
		},
		"SkipErrors": func(p *sluice.Pipeline, src sluice.Stream[*pmsg]) {
			sluice.ForEach(p, "sink", src, 4, func(context.Context, *pmsg) error { return errFail }, sluice.SkipErrors())
		},
		"Filter drops": func(p *sluice.Pipeline, src sluice.Stream[*pmsg]) {
			f := sluice.Filter(p, "none", src, 2, func(context.Context, *pmsg) (bool, error) { return false, nil })
			sluice.ForEach(p, "sink", f, 1, nop)
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			var s countSettler
			p := sluice.New(context.Background())
			build(p, sluice.FromSlice(p, "src", pmsgs(&s, n)))
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if got := s.acked.Load(); got != n {
				t.Fatalf("got %d of %d messages acknowledged (%d failed)", got, n, s.failed.Load())
			}
		})
	}
}

// TestANilPointerItemSettlesNothing checks a nil *pmsg passes a sink
// without a panic.
func TestANilPointerItemSettlesNothing(t *testing.T) {
	p := sluice.New(context.Background())
	sluice.ForEach(p, "sink", sluice.FromSlice(p, "src", []*pmsg{nil, nil}), 1, func(context.Context, *pmsg) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestPipelinesBuiltAtOnceSettleEveryMessage builds pipelines over a type
// on several goroutines at the same moment: each must settle all of its
// messages. A type's first use is the one that can go wrong, so the test
// uses a type no other test uses.
func TestPipelinesBuiltAtOnceSettleEveryMessage(t *testing.T) {
	type fresh struct {
		sluice.Receipt
		v int
	}
	const pipelines, n = 8, 10
	var s countSettler
	var start, wg sync.WaitGroup
	start.Add(1)
	for range pipelines {
		wg.Go(func() {
			start.Wait()
			ms := make([]fresh, n)
			for i := range ms {
				ms[i] = fresh{sluice.NewReceipt(&s, uint64(i)), i}
			}
			p := sluice.New(context.Background())
			b := sluice.Batch(p, "batch", sluice.FromSlice(p, "src", ms), 4, 0)
			sluice.ForEach(p, "sink", b, 1, func(context.Context, []fresh) error { return nil })
			if err := p.Wait(); err != nil {
				t.Error(err)
			}
		})
	}
	start.Done()
	wg.Wait()
	if got := s.acked.Load(); got != pipelines*n {
		t.Fatalf("got %d of %d messages acknowledged", got, pipelines*n)
	}
}
