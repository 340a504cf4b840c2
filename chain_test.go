package sluice

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// A stage whose options add no step has no chain: its worker's caller is
// the bare call.
func TestAStageWithoutCallOptionsHasNoChain(t *testing.T) {
	p := New(t.Context())
	defer p.cancel(nil)
	s := newStage(p, kindMap, "m", 1)
	ic := newItemCalls[int](p, s, stageOptions(kindMap, "m", []StageOption{Buffer(10), Auto(1, 4)}).calls)
	if _, ch := callOf(ic.cs, s.workers[0], ic.disposalOf(0, s.workers[0]), func(context.Context, int) (int, error) { return 0, nil }); ic.cs != nil || ic.d != nil || ch != nil {
		t.Fatalf("calls %+v, dispose %+v; want no chain", ic.cs, ic.d)
	}
}

// The steps wrap the call in rank order whatever the order of the
// options; a step given twice is replaced.
func TestStepsWrapTheCallInRankOrder(t *testing.T) {
	cfg := stageOptions(kindForEach, "f", []StageOption{
		Timeout(time.Second), Throttle(nopLimiter{}), Retry(2, 0, 0), Retry(3, 0, 0),
	})
	p := New(t.Context())
	defer p.cancel(nil)
	cs := newCalls[int](p, newStage(p, kindForEach, "f", 1), cfg.calls, false)
	var ranks []int
	for _, st := range cs.steps {
		ranks = append(ranks, st.rank())
	}
	want := []int{rankRetry, rankThrottle, rankTimeout}
	if !slices.Equal(ranks, want) {
		t.Fatalf("ranks %v; want %v", ranks, want)
	}
	if r := cs.steps[0].(*retryStep); r.attempts != 3 {
		t.Fatalf("retry of %d attempts; want the later Retry(3, …)", r.attempts)
	}
}

type nopLimiter struct{}

func (nopLimiter) Wait(context.Context) error { return nil }

// traceKey is the context key of traceStep.
type traceKey struct{}

// traceStep is what a span step does: it reads the item's receipt, hands
// the call a context of its own, and records around the call.
type traceStep struct {
	mu   *sync.Mutex
	seen *[]uint64 // the keys of the receipts of the items it saw
}

func (traceStep) rank() int { return rankRetry - 50 } // a span per item, around its retries

func (s traceStep) wrap(next call, at *site) call {
	return func(ctx context.Context) error {
		var key uint64
		at.receipts(func(r Receipt) { key = r.t.key })
		err := next(context.WithValue(ctx, traceKey{}, key))
		s.mu.Lock()
		*s.seen = append(*s.seen, key)
		s.mu.Unlock()
		return err
	}
}

type keyed struct {
	Receipt
	n uint64
}

type nopSettler struct{}

func (nopSettler) Settle(uint64, error) {}

// A step added in a file of its own wraps every call: it gives the call a
// context and reads the item's receipt.
func TestAStepWrapsTheCallWithAContextAndSeesTheItem(t *testing.T) {
	var mu sync.Mutex
	var seen []uint64
	use := option(fitsFunction, "Trace", func(c *stageConfig) { c.calls.use(traceStep{&mu, &seen}) })
	p := New(t.Context())
	var xs []keyed
	for k := range uint64(100) {
		xs = append(xs, keyed{NewReceipt(nopSettler{}, k), k})
	}
	m := Map(p, "m", FromSlice(p, "src", xs), 3, func(ctx context.Context, v keyed) (uint64, error) {
		if got := ctx.Value(traceKey{}); got != v.n {
			return 0, errors.New("the call did not get the step's context")
		}
		return v.n, nil
	}, use)
	got := Collect(p, "out", m)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(got.Value()) != 100 || len(seen) != 100 {
		t.Fatalf("%d results, the step saw %d items; want 100 each", len(got.Value()), len(seen))
	}
}

// The chain allocates nothing per call: steps are built once per worker.
// Nor does the bare call.
func TestTheChainAllocatesNothingPerCall(t *testing.T) {
	p := New(t.Context())
	defer p.cancel(nil)
	s := newStage(p, kindMap, "m", 1)
	cfg := stageOptions(kindMap, "m", []StageOption{Retry(3, 0, 0), Throttle(nopLimiter{}), SkipErrors()})
	ic := newItemCalls[int](p, s, cfg.calls)
	sum := 0
	f := func(_ context.Context, v int) (int, error) { sum += v; return sum, nil }
	ctx := context.Background()
	v := 1
	for _, cs := range []*calls[int]{ic.cs, nil} {
		call, _ := callOf(cs, s.workers[0], ic.disposalOf(0, s.workers[0]), f)
		if n := testing.AllocsPerRun(1000, func() { _, _ = call(ctx, v) }); n != 0 {
			t.Fatalf("chain %v: %v allocations per call; want 0", cs != nil, n)
		}
	}
}

// Every call that returns an error is counted in the worker's callErrs
// (Auto reads it), retries included; items settled as failed in failed,
// and retries in retries.
func TestEveryFailedCallIsCounted(t *testing.T) {
	bad := errors.New("bad")
	for _, c := range []struct {
		name                    string
		opts                    []StageOption
		callErrs, failed, tries int64
	}{
		{"SkipErrors", []StageOption{SkipErrors()}, 10, 10, 0},
		{"Retry and SkipErrors", []StageOption{Retry(3, 0, 0), SkipErrors()}, 30, 10, 20},
		{"Throttle and Timeout and SkipErrors", []StageOption{Throttle(nopLimiter{}), Timeout(time.Minute), SkipErrors()}, 10, 10, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := New(t.Context())
			ForEach(p, "f", FromSlice(p, "src", make([]int, 10)), 2, func(context.Context, int) error { return bad }, c.opts...)
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			var callErrs, failed, tries int64
			for _, s := range p.stages {
				if s.name != "f" {
					continue
				}
				for _, w := range s.workers {
					callErrs += w.callErrs.Load()
					failed += w.failed.Load()
					tries += w.retries.Load()
				}
			}
			if callErrs != c.callErrs || failed != c.failed || tries != c.tries {
				t.Fatalf("callErrs %d, failed %d, retries %d; want %d, %d, %d", callErrs, failed, tries, c.callErrs, c.failed, c.tries)
			}
		})
	}
}
