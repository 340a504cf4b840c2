package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// The contract harness: every stage kind × workers {1, 4} × every promise
// of doc.go. A stage added later gets all of it by adding one row.
//
// Each row builds a pipeline around one stage under test. Where the stage
// takes a user function, that function calls the harness's hook for every
// item; where it takes none (Batch, Merge, Collect, …), the hook runs in a
// ForEach right after it, so the row still checks that the stage passes
// every item on exactly once and stops when the pipeline does.

// hook is what the stage's user function does with each item.
type hook func(ctx context.Context, v int) error

type stageRow struct {
	name  string
	multi bool // takes a worker count; otherwise it runs with 1
	fixed bool // with multi: a fixed count only, no Auto and no call chain (Keyed, Window)
	errs  bool // its function can return an error (otherwise the error case is skipped)
	// policies: the stage settles each item on its own under the error
	// options (SkipErrors, DeadLetter, Retry, Timeout), which build passes
	// to it; other rows ignore opts.
	policies bool
	// source: the hook runs in the source before it takes the item, so an
	// item whose hook drains the pipeline is not taken.
	source bool
	// yields: the source is an iterator; an item it has yielded is taken
	// (the iterator cannot take it back), so a drain must deliver it.
	yields bool
	// opens: a drain leaves its open windows unemitted (Window, whose
	// inputs then stay unsettled for a restart): the item of the newest
	// window does not come out.
	opens bool
	// build makes the pipeline: the stage under test fed with xs. It
	// returns what reached the end of the pipeline, to be called after
	// Wait, or nil when the hook's calls are the output (sinks).
	build func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int
}

// identity is a Map function that hands v on after the hook.
func viaHook(h hook) func(ctx context.Context, v int) (int, error) {
	return func(ctx context.Context, v int) (int, error) { return v, h(ctx, v) }
}

// sinkVia ends a pipeline with a one-worker ForEach that calls the hook.
func sinkVia(p *sluice.Pipeline, s sluice.Stream[int], h hook) func() []int {
	sluice.ForEach(p, "hook-sink", s, 1, h)
	return nil
}

func collected(r *sluice.Result[[]int]) func() []int { return r.Value }

var stageRows = []stageRow{
	{name: "Map", multi: true, errs: true, policies: true, build: func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int {
		return collected(sluice.Collect(p, "out", sluice.Map(p, "stage", sluice.FromSlice(p, "src", xs), n, viaHook(h), opts...)))
	}},
	{name: "OrderedMap", multi: true, errs: true, policies: true, build: func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int {
		return collected(sluice.Collect(p, "out", sluice.OrderedMap(p, "stage", sluice.FromSlice(p, "src", xs), n, viaHook(h), opts...)))
	}},
	{name: "Filter", multi: true, errs: true, policies: true, build: func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int {
		keep := func(ctx context.Context, v int) (bool, error) { return true, h(ctx, v) }
		return collected(sluice.Collect(p, "out", sluice.Filter(p, "stage", sluice.FromSlice(p, "src", xs), n, keep, opts...)))
	}},
	{name: "FlatMap", multi: true, errs: true, policies: true, build: func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int {
		f := func(ctx context.Context, v int, emit func(int) bool) error {
			if err := h(ctx, v); err != nil {
				return err
			}
			emit(v)
			return nil
		}
		return collected(sluice.Collect(p, "out", sluice.FlatMap(p, "stage", sluice.FromSlice(p, "src", xs), n, f, opts...)))
	}},
	{name: "Keyed", multi: true, fixed: true, errs: true, build: func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int {
		fn := sluice.KeyFuncs[int, int, int, int]{
			Key: func(v int) int { return v % 13 },
			Item: func(ctx context.Context, _ int, _ *int, v int, emit func(int) bool) error {
				if err := h(ctx, v); err != nil {
					return err
				}
				emit(v)
				return nil
			},
		}
		return collected(sluice.Collect(p, "out", sluice.Keyed(p, "stage", sluice.FromSlice(p, "src", xs), n, fn, opts...)))
	}},
	{name: "Window", multi: true, fixed: true, opens: true, build: func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int {
		// One-millisecond windows, one item each: every item comes out once,
		// as its window's accumulator. Fold returns no error.
		spec := sluice.WindowSpec[int, int, int]{
			Windows: sluice.Tumbling(time.Millisecond),
			Key:     func(v int) int { return v % 13 },
			Time:    func(v int) time.Time { return time.Unix(0, int64(v)*int64(time.Millisecond)) },
			Fold: func(acc *int, v int) {
				_ = h(p.Context(), v)
				*acc = v
			},
		}
		panes := sluice.Window(p, "stage", sluice.FromSlice(p, "src", xs), n, spec, opts...)
		return collected(sluice.Collect(p, "out", sluice.Map(p, "acc", panes, 1, func(_ context.Context, pn sluice.Pane[int, int]) (int, error) {
			return pn.Acc, nil
		})))
	}},
	{name: "ForEach", multi: true, errs: true, policies: true, build: func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int {
		sluice.ForEach(p, "stage", sluice.FromSlice(p, "src", xs), n, h, opts...)
		return nil
	}},
	{name: "ForEachChunk", multi: true, errs: true, build: func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int {
		// ForEachChunk settles whole chunks: policy_test.go tests its error
		// options on its own; the harness passes it only Auto.
		sluice.ForEachChunk(p, "stage", sluice.FromSlice(p, "src", xs), n, chunkHook(h), opts...)
		return nil
	}},
	{name: "ForEachChunk Gather", multi: true, errs: true, build: func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int {
		// The same sink, its calls gathering the chunks that wait.
		sluice.ForEachChunk(p, "stage", sluice.FromSlice(p, "src", xs, sluice.Chunk(7)), n, chunkHook(h), append(opts, sluice.Gather(30))...)
		return nil
	}},
	{name: "Reduce", build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		ctx := p.Context()
		r := sluice.Reduce(p, "stage", sluice.FromSlice(p, "src", xs), []int(nil), func(acc []int, v int) []int {
			_ = h(ctx, v)
			return append(acc, v)
		})
		return r.Value
	}},
	{name: "Partition", build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		ctx := p.Context()
		parts := sluice.Partition(p, "stage", sluice.FromSlice(p, "src", xs), 3, func(v int) int {
			_ = h(ctx, v)
			return v % 7
		})
		return collected(sluice.Collect(p, "out", sluice.Merge(p, "merge", parts)))
	}},
	{name: "From", errs: true, source: true, build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		src := sluice.From(p, "stage", func(ctx context.Context, out *sluice.Emitter[int]) error {
			for _, v := range xs {
				// Send notices a stop per chunk; a generator that must
				// stop at once checks its context, as this one does.
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err := h(ctx, v); err != nil {
					return err
				}
				if !out.Send(v) {
					return nil
				}
			}
			return nil
		})
		return collected(sluice.Collect(p, "out", src))
	}},
	{name: "FromSeq", source: true, yields: true, build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		ctx := p.Context()
		seq := func(yield func(int) bool) {
			for _, v := range xs {
				_ = h(ctx, v)
				if !yield(v) {
					return
				}
			}
		}
		return collected(sluice.Collect(p, "out", sluice.FromSeq(p, "stage", seq)))
	}},
	{name: "FromSeq2", errs: true, source: true, yields: true, build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		ctx := p.Context()
		seq := func(yield func(int, error) bool) {
			for _, v := range xs {
				if err := h(ctx, v); err != nil {
					yield(0, err)
					return
				}
				if !yield(v, nil) {
					return
				}
			}
		}
		return collected(sluice.Collect(p, "out", sluice.FromSeq2(p, "stage", seq)))
	}},
	// Stages without a user function: the hook runs right after them.
	{name: "FromSlice", errs: true, build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		return sinkVia(p, sluice.FromSlice(p, "stage", xs), h)
	}},
	{name: "FromChan", errs: true, build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		ch := make(chan int)
		go func() { // owned by the test: ends when xs is sent or the pipeline stops
			defer close(ch)
			for _, v := range xs {
				select {
				case ch <- v:
				case <-p.Context().Done():
					return
				}
			}
		}()
		return sinkVia(p, sluice.FromChan(p, "stage", ch), h)
	}},
	{name: "Batch", errs: true, build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		b := sluice.Batch(p, "stage", sluice.FromSlice(p, "src", xs), 100, time.Millisecond)
		return sinkVia(p, sluice.Unbatch(p, "unbatch", b), h)
	}},
	{name: "Unbatch", errs: true, build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		var batches [][]int
		for x := range slices.Chunk(xs, 33) {
			batches = append(batches, x)
		}
		return sinkVia(p, sluice.Unbatch(p, "stage", sluice.FromSlice(p, "src", batches)), h)
	}},
	{name: "Merge", errs: true, build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		half := len(xs) / 2
		m := sluice.Merge(p, "stage", []sluice.Stream[int]{sluice.FromSlice(p, "a", xs[:half]), sluice.FromSlice(p, "b", xs[half:])})
		return sinkVia(p, m, h)
	}},
	{name: "Broadcast", errs: true, build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		outs := sluice.Broadcast(p, "stage", sluice.FromSlice(p, "src", xs), 2)
		other := sluice.Collect(p, "other", outs[1])
		sinkVia(p, outs[0], h)
		return other.Value
	}},
	{name: "Collect", errs: true, build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		m := sluice.Map(p, "hook-map", sluice.FromSlice(p, "src", xs), 1, viaHook(h))
		return collected(sluice.Collect(p, "stage", m))
	}},
	{name: "ToChan", errs: true, build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		m := sluice.Map(p, "hook-map", sluice.FromSlice(p, "src", xs), 1, viaHook(h))
		ch := sluice.ToChan(p, "stage", m)
		var got []int
		done := make(chan struct{})
		go func() { // owned by the test: ends when ch closes
			defer close(done)
			for v := range ch {
				got = append(got, v)
			}
		}()
		return func() []int { <-done; return got }
	}},
	{name: "ToSeq", errs: true, build: func(p *sluice.Pipeline, xs []int, _ int, h hook, opts ...sluice.StageOption) func() []int {
		m := sluice.Map(p, "hook-map", sluice.FromSlice(p, "src", xs), 1, viaHook(h))
		seq := sluice.ToSeq(p, "stage", m)
		var got []int
		done := make(chan struct{})
		go func() { // owned by the test: ends when the sequence does
			defer close(done)
			for v := range seq {
				got = append(got, v)
			}
		}()
		return func() []int { <-done; return got }
	}},
}

const harnessItems = 3000

// forEachStage runs check for every row and worker count in its own
// synctest bubble: a goroutine left behind or a Wait that never returns
// fails the bubble. Rows with a pool also run with Auto(1, 8), starting
// at 2 workers; rows whose function takes the stage's options run once
// more through a call chain that changes nothing (a Throttle that never
// waits), at 4 workers, so that every promise holds on the chain's path
// as on the plain loop's.
func forEachStage(t *testing.T, check func(t *testing.T, row stageRow, n int)) {
	for _, row := range stageRows {
		for _, n := range []int{1, 4, 0, -1} {
			if n != 1 && !row.multi || n == -1 && !row.policies && !strings.HasPrefix(row.name, "ForEachChunk") || n == 0 && row.fixed {
				continue
			}
			name := fmt.Sprintf("%s/workers=%d", row.name, n)
			var extra sluice.StageOption
			switch n {
			case 0:
				name, n, extra = row.name+"/workers=Auto(1,8)", 2, sluice.Auto(1, 8)
			case -1:
				name, n, extra = row.name+"/workers=4/chain", 4, sluice.Throttle(noLimit{})
			}
			if extra != nil {
				build := row.build
				row.build = func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int {
					return build(p, xs, n, h, append(opts, extra)...)
				}
			}
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { check(t, row, n) })
			})
		}
	}
}

// recorder is a hook that records every item it sees.
type recorder struct {
	mu   sync.Mutex
	seen []int
}

func (r *recorder) hook(_ context.Context, v int) error {
	r.mu.Lock()
	r.seen = append(r.seen, v)
	r.mu.Unlock()
	return nil
}

func TestContractEveryItemExactlyOnce(t *testing.T) {
	forEachStage(t, func(t *testing.T, row stageRow, n int) {
		p := sluice.New(t.Context())
		var rec recorder
		out := row.build(p, ints(harnessItems), n, rec.hook)
		if err := p.Wait(); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		checkExactlyOnce(t, rec.seen, ints(harnessItems))
		if out != nil {
			checkExactlyOnce(t, out(), ints(harnessItems))
		}
	})
}

func TestContractFirstErrorWinsAndIsReturned(t *testing.T) {
	errFirst, errLater := errors.New("first"), errors.New("later")
	forEachStage(t, func(t *testing.T, row stageRow, n int) {
		if !row.errs {
			t.Skip("the stage's function returns no error")
		}
		p := sluice.New(t.Context())
		// Errors that come after the first one has stopped the pipeline
		// must not replace it.
		out := row.build(p, ints(harnessItems), n, func(ctx context.Context, v int) error {
			if ctx.Err() != nil {
				return errLater
			}
			if v == 100 {
				return errFirst
			}
			return nil
		})
		err := p.Wait()
		var se *sluice.StageError
		if !errors.Is(err, errFirst) || !errors.As(err, &se) {
			t.Fatalf("Wait returned %v, want a *StageError wrapping %v", err, errFirst)
		}
		if out != nil {
			out() // the sink's result is ready even after a failure
		}
	})
}

func TestContractPanicBecomesPanicError(t *testing.T) {
	forEachStage(t, func(t *testing.T, row stageRow, n int) {
		p := sluice.New(t.Context())
		out := row.build(p, ints(harnessItems), n, func(_ context.Context, v int) error {
			if v == 100 {
				panic("boom at 100")
			}
			return nil
		})
		err := p.Wait()
		var pe *sluice.PanicError
		if !errors.As(err, &pe) || pe.Value != "boom at 100" || len(pe.Stack) == 0 {
			t.Fatalf("Wait returned %v, want a *PanicError with the value and a stack", err)
		}
		if out != nil {
			out()
		}
	})
}

func TestContractGoexitFailsThePipeline(t *testing.T) {
	forEachStage(t, func(t *testing.T, row stageRow, n int) {
		p := sluice.New(t.Context())
		out := row.build(p, ints(harnessItems), n, func(_ context.Context, v int) error {
			if v == 100 {
				runtime.Goexit() // what t.FailNow does when called in a stage
			}
			return nil
		})
		err := p.Wait() // a hang here fails the synctest bubble
		if !errors.Is(err, sluice.ErrGoexit) {
			t.Fatalf("Wait returned %v, want an error wrapping ErrGoexit", err)
		}
		if out != nil {
			out()
		}
	})
}

func TestContractParentCancelReturnsItsCause(t *testing.T) {
	cause := errors.New("shutting down")
	forEachStage(t, func(t *testing.T, row stageRow, n int) {
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		p := sluice.New(ctx)
		out := row.build(p, ints(harnessItems), n, func(ctx context.Context, v int) error {
			if v == 100 {
				cancel(cause)
			}
			return ctx.Err() // what a function does when its context is done
		})
		err := p.Wait()
		var se *sluice.StageError
		if err != cause || errors.As(err, &se) {
			t.Fatalf("Wait returned %v (%T), want the parent's cause %v", err, err, cause)
		}
		if out != nil {
			out()
		}
	})
}

// TestContractAPanicAfterAParentCancelIsItsEcho: a panic or Goexit in a
// function after the parent was cancelled comes after the stop, like an
// error returned then, so Wait returns the parent's cause: the first of
// the two, as doc.go promises.
func TestContractAPanicAfterAParentCancelIsItsEcho(t *testing.T) {
	cause := errors.New("shutting down")
	for _, how := range []string{"panic", "Goexit"} {
		t.Run(how, func(t *testing.T) {
			forEachStage(t, func(t *testing.T, row stageRow, n int) {
				ctx, cancel := context.WithCancelCause(t.Context())
				defer cancel(nil)
				p := sluice.New(ctx)
				out := row.build(p, ints(harnessItems), n, func(ctx context.Context, v int) error {
					if v == 100 {
						cancel(cause)
						if how == "panic" {
							panic("a function that panics when its context is done")
						}
						runtime.Goexit()
					}
					return nil
				})
				err := p.Wait()
				if err != cause {
					t.Fatalf("Wait returned %v (%T), want the parent's cause %v", err, err, cause)
				}
				if out != nil {
					out()
				}
			})
		})
	}
}

func TestContractNoCallAfterTheCancelIsNoticed(t *testing.T) {
	forEachStage(t, func(t *testing.T, row stageRow, n int) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		p := sluice.New(ctx)
		at, gate := make(chan struct{}), make(chan struct{})
		var noticed atomic.Bool
		var late atomic.Int64
		out := row.build(p, ints(harnessItems), n, func(_ context.Context, v int) error {
			if noticed.Load() {
				late.Add(1)
			}
			if v == 100 {
				close(at)
				<-gate
			}
			return nil
		})
		<-at
		cancel()
		synctest.Wait() // every goroutine of the pipeline has seen the cancel or is parked
		noticed.Store(true)
		close(gate)
		if err := p.Wait(); err != context.Canceled {
			t.Fatalf("Wait returned %v, want context.Canceled", err)
		}
		if got := late.Load(); got != 0 {
			t.Fatalf("%d calls after the cancel was noticed, want 0", got)
		}
		if out != nil {
			out()
		}
	})
}

// chunkHook calls h for each item of a ForEachChunk call. A call's first
// item always reaches the hook, so a call made after the stop is counted;
// within a call, the function itself stops at a done context, as a
// well-written one does.
func chunkHook(h hook) func(ctx context.Context, items []int) error {
	return func(ctx context.Context, items []int) error {
		for i, v := range items {
			if i > 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if err := h(ctx, v); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestContractNoCallAfterTheParentsCancelReturned: once the parent's
// cancel has returned, the stage calls its function no more, without
// waiting for anything else to notice the cancel. One worker, whose
// function cancels: the call that cancels is the one in flight, and any
// later call is one too many. With and without a call chain.
func TestContractNoCallAfterTheParentsCancelReturned(t *testing.T) {
	for _, row := range stageRows {
		if !row.multi {
			continue
		}
		for _, chain := range []bool{false, true} {
			if chain && row.fixed {
				continue // Keyed and Window take no function option: they have no chain
			}
			var opts []sluice.StageOption
			name := row.name + "/plain"
			if chain {
				opts, name = []sluice.StageOption{sluice.Throttle(noLimit{})}, row.name+"/chain"
			}
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				p := sluice.New(ctx)
				var cancelled atomic.Bool
				var late atomic.Int64
				out := row.build(p, ints(harnessItems), 1, func(_ context.Context, v int) error {
					if cancelled.Load() {
						late.Add(1)
					}
					if v == 100 {
						cancel()
						cancelled.Store(true)
					}
					return nil
				}, opts...)
				if err := p.Wait(); err != context.Canceled {
					t.Fatalf("Wait returned %v, want context.Canceled", err)
				}
				if got := late.Load(); got != 0 {
					t.Fatalf("%d calls after the parent's cancel returned, want 0", got)
				}
				if out != nil {
					out()
				}
			})
		}
	}
}
