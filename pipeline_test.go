package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

func TestEveryItemArrivesExactlyOnce(t *testing.T) {
	for _, n := range []int{0, 1, 255, 256, 257, 100_000} {
		for _, workers := range []int{1, 3, 8} {
			t.Run(fmt.Sprintf("n=%d/workers=%d", n, workers), func(t *testing.T) {
				p := sluice.New(context.Background())
				src := sluice.FromSlice(p, "src", ints(n))
				m := sluice.Map(p, "id", src, workers, func(_ context.Context, v int) (int, error) { return v, nil })
				f := sluice.Filter(p, "all", m, workers, func(context.Context, int) (bool, error) { return true, nil })
				got := sluice.Collect(p, "collect", f)
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				checkExactlyOnce(t, got.Value(), ints(n))
			})
		}
	}
}

func TestSingleWorkerStagesKeepOrder(t *testing.T) {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "src", ints(10_000))
	m := sluice.Map(p, "double", src, 1, double)
	f := sluice.Filter(p, "even", m, 1, func(_ context.Context, v int) (bool, error) { return v%4 == 0, nil })
	fm := sluice.FlatMap(p, "twice", f, 1, func(_ context.Context, v int, emit func(int) bool) error {
		emit(v)
		emit(v + 1)
		return nil
	})
	got := sluice.Collect(p, "collect", fm)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	var want []int
	for i := range 10_000 {
		if v := 2 * i; v%4 == 0 {
			want = append(want, v, v+1)
		}
	}
	if fmt.Sprint(got.Value()) != fmt.Sprint(want) {
		t.Fatalf("got %v…, want %v…", head(got.Value()), head(want))
	}
}

func TestFirstErrorCancelsEverythingAndIsReturned(t *testing.T) {
	boom := errors.New("boom")
	p := sluice.New(context.Background())
	var after atomic.Int64
	src := sluice.From(p, "endless", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := 0; ; i++ {
			if !out.Send(i) {
				return ctx.Err()
			}
		}
	})
	m := sluice.Map(p, "fail", src, 4, func(_ context.Context, v int) (int, error) {
		if v == 5000 {
			return 0, boom
		}
		return v, nil
	})
	sluice.ForEach(p, "sink", m, 2, func(ctx context.Context, v int) error {
		if ctx.Err() != nil {
			after.Add(1)
		}
		return nil
	})
	err := p.Wait()
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want an error wrapping %v", err, boom)
	}
	var se *sluice.StageError
	if !errors.As(err, &se) || se.Stage != "fail" {
		t.Fatalf("got %#v, want a *StageError for stage %q", err, "fail")
	}
	if p.Context().Err() == nil {
		t.Fatal("got a live scope context after Wait, want it cancelled")
	}
}

func TestOnlyTheFirstOfSeveralErrorsIsReturned(t *testing.T) {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "src", ints(1000))
	first := make(chan struct{})
	sluice.ForEach(p, "sink", src, 4, func(ctx context.Context, v int) error {
		if v == 0 {
			close(first)
			return errors.New("first")
		}
		<-first
		<-ctx.Done()
		return errors.New("later")
	})
	err := p.Wait()
	if err == nil || !strings.Contains(err.Error(), "first") {
		t.Fatalf("got %v, want the first error", err)
	}
}

func TestPanicBecomesErrorWithStack(t *testing.T) {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "src", ints(100))
	m := sluice.Map(p, "explode", src, 2, func(_ context.Context, v int) (int, error) {
		if v == 42 {
			panic("kaboom")
		}
		return v, nil
	})
	sluice.ForEach(p, "sink", m, 1, func(context.Context, int) error { return nil })
	err := p.Wait()
	var pe *sluice.PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a *PanicError", err)
	}
	if pe.Stage != "explode" || pe.Value != "kaboom" || !strings.Contains(string(pe.Stack), "pipeline_test.go") {
		t.Fatalf("got stage %q value %v stack %.200s…, want stage explode, value kaboom and a stack through the test", pe.Stage, pe.Value, pe.Stack)
	}
}

func TestParentCancellationStopsEndlessPipelineWithoutLeaks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := sluice.New(ctx)
	src := sluice.From(p, "endless", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := 0; ; i++ {
			if !out.Send(i) {
				return nil
			}
		}
	})
	a := sluice.Map(p, "a", src, 3, double)
	b := sluice.OrderedMap(p, "b", a, 3, double)
	c := sluice.Batch(p, "c", b, 100, time.Millisecond)
	parts := sluice.Partition(p, "d", sluice.Unbatch(p, "u", c), 2, func(v int) int { return v % 7 })
	bc := sluice.Broadcast(p, "e", parts[0], 2)
	m := sluice.Merge(p, "f", []sluice.Stream[int]{bc[0], bc[1], parts[1]})
	var seen atomic.Int64
	sluice.ForEach(p, "sink", m, 2, func(context.Context, int) error {
		if seen.Add(1) == 50_000 {
			cancel()
		}
		return nil
	})
	err := p.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	// TestMain's leak check covers the goroutines.
}

func TestCancellationWhileBlockedInToChanReturns(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := sluice.New(ctx)
	ch := sluice.ToChan(p, "out", sluice.FromSlice(p, "src", ints(10_000)))
	<-ch // take one, then walk away
	cancel()
	if err := p.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	for range ch { // the channel is closed, possibly after a few buffered values
	}
}

func TestWaitTwiceReturnsTheSameResult(t *testing.T) {
	p := sluice.New(context.Background())
	sluice.ForEach(p, "sink", sluice.FromSlice(p, "src", ints(10)), 1, func(context.Context, int) error {
		return errors.New("no")
	})
	e1, e2 := p.Wait(), p.Wait()
	if e1 == nil || e1 != e2 {
		t.Fatalf("got %v then %v, want the same non-nil error twice", e1, e2)
	}
}

func TestGeneratorErrorFailsThePipeline(t *testing.T) {
	p := sluice.New(context.Background())
	src := sluice.From(p, "gen", func(_ context.Context, out *sluice.Emitter[int]) error {
		out.Send(1)
		return errors.New("source broke")
	})
	sluice.ForEach(p, "sink", src, 1, func(context.Context, int) error { return nil })
	err := p.Wait()
	var se *sluice.StageError
	if !errors.As(err, &se) || se.Stage != "gen" {
		t.Fatalf("got %v, want a *StageError from stage gen", err)
	}
}

func TestFromChanAndToChanRoundTrip(t *testing.T) {
	in := make(chan int)
	go func() {
		defer close(in)
		for i := range 1000 {
			in <- i
		}
	}()
	p := sluice.New(context.Background())
	out := sluice.ToChan(p, "out", sluice.Map(p, "double", sluice.FromChan(p, "in", in), 1, double))
	var got []int
	for v := range out {
		got = append(got, v)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	want := ints(1000)
	for i := range want {
		want[i] *= 2
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v…, want %v…", head(got), head(want))
	}
}

func TestFromSeqSendsEveryItem(t *testing.T) {
	p := sluice.New(context.Background())
	seq := func(yield func(int) bool) {
		for i := range 600 {
			if !yield(i) {
				return
			}
		}
	}
	got := sluice.Collect(p, "c", sluice.FromSeq(p, "seq", seq))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, got.Value(), ints(600))
}

func TestReduceFoldsInOrder(t *testing.T) {
	p := sluice.New(context.Background())
	words := []string{"a", "b", "c", "d"}
	r := sluice.Reduce(p, "join", sluice.FromSlice(p, "w", words), "", func(acc, w string) string { return acc + w })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := r.Value(); got != "abcd" {
		t.Fatalf("got %q, want %q", got, "abcd")
	}
}

func TestNoFunctionIsCalledAfterTheScopeFails(t *testing.T) {
	for _, kind := range []string{"ForEach", "Map", "Filter", "OrderedMap", "FlatMap", "Reduce"} {
		t.Run(kind, func(t *testing.T) {
			p := sluice.New(context.Background())
			var calls atomic.Int64
			// The first call waits until another branch has failed the
			// scope; the other 255 items of its chunk must not be processed.
			f := func(ctx context.Context, v int) error {
				calls.Add(1)
				if v == 0 {
					<-ctx.Done()
				}
				return nil
			}
			src := sluice.FromSlice(p, "src", ints(256))
			id := func(ctx context.Context, v int) (int, error) { return v, f(ctx, v) }
			var out sluice.Stream[int]
			switch kind {
			case "ForEach":
				sluice.ForEach(p, "stage", src, 1, f)
			case "Map":
				out = sluice.Map(p, "stage", src, 1, id)
			case "OrderedMap":
				out = sluice.OrderedMap(p, "stage", src, 1, id)
			case "Filter":
				out = sluice.Filter(p, "stage", src, 1, func(ctx context.Context, v int) (bool, error) { return true, f(ctx, v) })
			case "Reduce":
				sluice.Reduce(p, "stage", src, 0, func(acc, v int) int {
					_ = f(p.Context(), v)
					return acc + v
				})
			case "FlatMap":
				out = sluice.FlatMap(p, "stage", src, 1, func(ctx context.Context, v int, emit func(int) bool) error {
					emit(v)
					return f(ctx, v)
				})
			}
			if out != (sluice.Stream[int]{}) {
				sluice.ForEach(p, "sink", out, 1, func(context.Context, int) error { return nil })
			}
			sluice.ForEach(p, "failer", sluice.FromSlice(p, "trigger", []int{1}), 1, func(context.Context, int) error {
				for calls.Load() == 0 {
					time.Sleep(time.Millisecond)
				}
				return errors.New("stop")
			})
			if err := p.Wait(); err == nil {
				t.Fatal("got nil, want the failer's error")
			}
			if got := calls.Load(); got != 1 {
				t.Fatalf("got %d calls, want 1: the function ran after the scope failed", got)
			}
		})
	}
}

// A generator that panics after sending several chunks — so that its
// flusher goroutine has handed chunks on — fails the pipeline with the
// panic, and the flusher ends with it (goleak checks in TestMain).
func TestGeneratorPanicAfterFullChunksEndsItsFlusher(t *testing.T) {
	p := sluice.New(context.Background())
	src := sluice.From(p, "gen", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := range 100_000 {
			if i == 50_000 {
				panic("generator gave up")
			}
			if !out.Send(i) {
				return ctx.Err()
			}
		}
		return nil
	})
	var got atomic.Int64
	sluice.ForEach(p, "count", src, 2, func(context.Context, int) error { got.Add(1); return nil })
	err := p.Wait()
	var pe *sluice.PanicError
	if !errors.As(err, &pe) || pe.Stage != "gen" || pe.Value != "generator gave up" {
		t.Fatalf("got %v, want the generator's panic", err)
	}
	if n := got.Load(); n > 50_000 {
		t.Fatalf("got %d items, want at most the 50000 sent before the panic", n)
	}
}

// Every item a generator sends arrives once and in order, across many full
// chunks and explicit flushes, including a last partial chunk.
func TestGeneratorItemsArriveInOrderAcrossChunksAndFlushes(t *testing.T) {
	p := sluice.New(context.Background())
	const n = 3*sluice.DefaultChunk + 123
	src := sluice.From(p, "gen", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := range n {
			if !out.Send(i) {
				return ctx.Err()
			}
			if i%1000 == 999 && !out.Flush() {
				return ctx.Err()
			}
		}
		return nil
	})
	got := sluice.Collect(p, "all", src)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Value(), ints(n)) {
		t.Fatalf("got %d items, not 0..%d in order", len(got.Value()), n-1)
	}
}

// After Wait returns, no goroutine of the scope runs — including the
// callbacks that a cancel of the parent context starts (the one that raises
// the halt flag, DrainOn's). One processor, so that a callback the cancel
// made runnable has not run by itself when Wait returns.
func TestNoGoroutineOfTheScopeRunsAfterWait(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		drainCtx, stopDrain := context.WithCancel(t.Context())
		p := sluice.New(ctx)
		p.DrainOn(drainCtx)
		sluice.Collect(p, "c", sluice.FromSlice(p, "src", ints(10)))
		synctest.Wait() // every stage has finished
		cancel()
		stopDrain()
		p.Wait()
		buf := make([]byte, 1<<20)
		self := string(buf[:runtime.Stack(buf, false)])
		bubble := self[strings.Index(self, "synctest bubble"):strings.Index(self, "]")]
		stacks := string(buf[:runtime.Stack(buf, true)])
		for _, g := range strings.Split(stacks, "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(header, bubble+"]") && strings.Contains(g, "sluice.") && !strings.Contains(g, "_test.") {
				t.Fatalf("a goroutine of the scope is still there after Wait:\n%s", g)
			}
		}
	})
}
