package sluice_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// keepsOrder names the harness rows whose output keeps input order with
// one worker (OrderedMap with any number).
func keepsOrder(row stageRow, n int) bool {
	switch row.name {
	case "Merge", "Partition":
		return false
	case "OrderedMap":
		return true
	}
	return n == 1
}

// A drain through every stage of the harness: what the source took goes
// through whole — each item once, in order where order is promised — and
// Wait returns nil.
func TestContractDrainFinishesWhatWasTaken(t *testing.T) {
	forEachStage(t, func(t *testing.T, row stageRow, n int) {
		p := sluice.New(t.Context())
		var rec recorder
		out := row.build(p, ints(harnessItems), n, func(ctx context.Context, v int) error {
			if v == 100 {
				p.Drain()
			}
			return rec.hook(ctx, v)
		})
		if err := p.Wait(); err != nil {
			t.Fatalf("Wait after a drain: %v", err)
		}
		seen := rec.seen
		if row.source {
			// The hook runs before the source takes the item: the source
			// took a prefix of what the hook saw, at least up to the drain.
			got := out()
			if row.yields && !slices.Equal(got, seen) {
				t.Fatalf("the source delivered %d items (%v…), want every one of the %d its iterator yielded", len(got), head(got), len(seen))
			}
			if len(got) < 100 || !slices.Equal(got, seen[:len(got)]) {
				t.Fatalf("the source delivered %d items (%v…), want a prefix of the %d it saw, of 100 or more", len(got), head(got), len(seen))
			}
			return
		}
		if out != nil {
			got, want := out(), seen
			if row.opens {
				// With no OutOfOrder the watermark is the newest item's
				// time: only its window is still open at the drain.
				newest := slices.Max(seen)
				want = slices.DeleteFunc(slices.Clone(seen), func(v int) bool { return v == newest })
			}
			checkExactlyOnce(t, got, want)
			if keepsOrder(row, n) && !slices.IsSorted(got) {
				t.Fatalf("output out of order after a drain: %v…", head(got))
			}
		}
		if !slices.Contains(seen, 100) {
			t.Fatal("the item that called Drain is lost")
		}
		checkExactlyOnce(t, seen, slices.Compact(slices.Sorted(slices.Values(seen))))
	})
}

// An endless generator stops at the drain; every item Send accepted comes
// out, in order.
func TestDrainStopsAGeneratorAndKeepsWhatItSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(t.Context())
		var accepted int
		src := sluice.From(p, "endless", func(ctx context.Context, out *sluice.Emitter[int]) error {
			for i := 0; ; i++ {
				if !out.Send(i) {
					return nil
				}
				accepted++
				if i%100 == 99 {
					time.Sleep(time.Millisecond)
				}
			}
		})
		m := sluice.OrderedMap(p, "double", src, 4, double)
		got := sluice.Collect(p, "c", m)
		time.AfterFunc(50*time.Millisecond, p.Drain)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		want := ints(accepted)
		for i := range want {
			want[i] *= 2
		}
		if !slices.Equal(got.Value(), want) || accepted < 1000 {
			t.Fatalf("got %d items, want the %d accepted, doubled, in order", len(got.Value()), accepted)
		}
	})
}

// A drain while the sink is blocked waits for it, then completes.
func TestDrainWhileASinkIsBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(t.Context())
		gate := make(chan struct{})
		ch := make(chan int)
		go func() { // the test's feeder: ends when the source stops reading
			defer close(ch)
			for i := 0; ; i++ {
				select {
				case ch <- i:
				case <-p.Context().Done():
					return
				case <-gate:
					return
				}
			}
		}()
		var mu sync.Mutex
		var seen []int
		sluice.ForEach(p, "blocked", sluice.FromChan(p, "src", ch), 1, func(_ context.Context, v int) error {
			if v == 10 {
				<-gate
			}
			mu.Lock()
			seen = append(seen, v)
			mu.Unlock()
			return nil
		})
		synctest.Wait() // the sink is held at item 10
		p.Drain()
		synctest.Wait()
		close(gate)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if len(seen) < 11 || !slices.Equal(seen, ints(len(seen))) {
			t.Fatalf("got %v…, want 0..n in order", head(seen))
		}
	})
}

// A stage error during a drain is still the pipeline's error.
func TestDrainRacingAStageError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(t.Context())
		src := sluice.FromSlice(p, "src", ints(10_000))
		sluice.ForEach(p, "sink", src, 2, func(_ context.Context, v int) error {
			if v == 500 {
				p.Drain()
				return errBad
			}
			return nil
		})
		if err := p.Wait(); !errors.Is(err, errBad) {
			t.Fatalf("Wait returned %v, want %v", err, errBad)
		}
	})
}

// Cancelling during a drain aborts, as any cancellation does.
func TestCancelDuringADrainAborts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		p := sluice.New(ctx)
		sluice.ForEach(p, "slow", sluice.FromSlice(p, "src", ints(1000)), 1, func(ctx context.Context, v int) error {
			if v == 5 {
				p.Drain()
				cancel(errBad)
			}
			return nil
		})
		if err := p.Wait(); err != errBad {
			t.Fatalf("Wait returned %v, want the cancel's cause", err)
		}
	})
}

func TestDrainOnDrainsWhenTheContextIsDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sig, stop := context.WithCancel(t.Context())
		p := sluice.New(t.Context())
		p.DrainOn(sig)
		src := sluice.From(p, "ticks", func(ctx context.Context, out *sluice.Emitter[int]) error {
			for i := 0; ; i++ {
				select {
				case <-out.Done():
					return nil
				case <-time.After(time.Millisecond):
				}
				if !out.Send(i) || !out.Flush() {
					return nil
				}
			}
		})
		got := sluice.Collect(p, "c", src)
		time.AfterFunc(10*time.Millisecond+time.Microsecond, stop) // a SIGTERM, say
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Value(), ints(10)) {
			t.Fatalf("got %v, want the 10 ticks before the drain", got.Value())
		}
	})
}

// DrainOn a context that is already done (a SIGTERM that came while the
// pipeline was being built) has drained the pipeline when it returns: a
// source built after it takes nothing.
func TestDrainOnAContextAlreadyDoneDrainsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sig, stop := context.WithCancel(t.Context())
		stop()
		p := sluice.New(t.Context())
		p.DrainOn(sig)
		got := sluice.Collect(p, "c", sluice.FromSlice(p, "src", ints(harnessItems)))
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if n := len(got.Value()); n != 0 {
			t.Fatalf("the source took %d items after DrainOn with a done context returned, want 0", n)
		}
	})
}

// Drain may be called any number of times, before and after Wait, and
// DrainOn with a context done only after Wait does nothing.
func TestDrainTwiceAndAfterWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sig, stop := context.WithCancel(t.Context())
		p := sluice.New(t.Context())
		p.DrainOn(sig)
		src := sluice.From(p, "gen", func(ctx context.Context, out *sluice.Emitter[int]) error {
			for i := 0; out.Send(i); i++ {
				if i == 10 {
					p.Drain()
					p.Drain()
				}
			}
			return nil
		})
		got := sluice.Collect(p, "c", src)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		p.Drain()
		stop()
		if err := p.Wait(); err != nil {
			t.Fatalf("Wait after a late Drain returned %v, want nil", err)
		}
		if v := got.Value(); len(v) < 11 || !slices.Equal(v, ints(len(v))) {
			t.Fatalf("got %d items (%v…), want 0..n in order, n ≥ 11", len(v), head(v))
		}
	})
}

func TestToSeqRangesOverTheStream(t *testing.T) {
	p := sluice.New(context.Background())
	seq := sluice.ToSeq(p, "out", sluice.Map(p, "double", sluice.FromSlice(p, "src", ints(5000)), 3, double))
	var got []int
	for v := range seq {
		got = append(got, v)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	want := ints(5000)
	for i := range want {
		want[i] *= 2
	}
	checkExactlyOnce(t, got, want)
	mustPanic(t, func() {
		for range seq {
		}
	}, `sluice: ToSeq "out"`, "only once")
}

func TestToSeqBreakLetsThePipelineFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(t.Context())
		var calls int
		m := sluice.Map(p, "count", sluice.FromSlice(p, "src", ints(10_000)), 1, func(_ context.Context, v int) (int, error) {
			calls++
			return v, nil
		})
		for v := range sluice.ToSeq(p, "out", m) {
			if v == 10 {
				break
			}
		}
		if err := p.Wait(); err != nil || calls != 10_000 {
			t.Fatalf("Wait: %v after %d calls; want nil after every item", err, calls)
		}
	})
}

func TestToSeqEndsWithThePipelinesError(t *testing.T) {
	p := sluice.New(context.Background())
	m := sluice.Map(p, "fail", sluice.FromSlice(p, "src", ints(10_000)), 2, func(_ context.Context, v int) (int, error) {
		if v == 777 {
			return 0, errBad
		}
		return v, nil
	})
	n := 0
	for range sluice.ToSeq(p, "out", m) {
		n++
	}
	if err := p.Wait(); !errors.Is(err, errBad) || n >= 10_000 {
		t.Fatalf("Wait: %v after %d items, want %v before the end", err, n, errBad)
	}
}

func TestFromSeq2SendsUntilAnError(t *testing.T) {
	seq := func(fail bool) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			for i := range 100 {
				if fail && i == 50 {
					yield(0, errBad)
					return
				}
				if !yield(i, nil) {
					return
				}
			}
		}
	}
	p := sluice.New(context.Background())
	got := sluice.Collect(p, "c", sluice.FromSeq2(p, "src", seq(false)))
	if err := p.Wait(); err != nil || !slices.Equal(got.Value(), ints(100)) {
		t.Fatalf("got %v, %v; want 0..99", got.Value(), err)
	}
	p = sluice.New(context.Background())
	sluice.Collect(p, "c", sluice.FromSeq2(p, "src", seq(true)))
	var se *sluice.StageError
	if err := p.Wait(); !errors.Is(err, errBad) || !errors.As(err, &se) || se.Stage != "src" {
		t.Fatalf("Wait returned %v, want the sequence's error from stage src", err)
	}
}

// A drain stops a From generator whatever its flush pattern: Send returns
// false from the next chunk boundary on, and a Flush is one. A generator
// that flushes after every item (as Flush's doc advises one that waits
// between items) starts a new chunk with each item, so a drain noticed
// only when a chunk fills was never noticed, and Wait waited for ever.
func TestDrainStopsAGeneratorThatFlushes(t *testing.T) {
	// most is how many items Send may accept after the drain: those
	// before the next chunk boundary.
	patterns := map[string]struct {
		flush func(out *sluice.Emitter[int], i int)
		most  int
	}{
		"Flush after each item":  {func(out *sluice.Emitter[int], _ int) { out.Flush() }, 1},
		"Flush every 3 items":    {func(out *sluice.Emitter[int], i int) { _ = i%3 == 2 && out.Flush() }, 3},
		"Await after each item":  {func(out *sluice.Emitter[int], _ int) { out.Await(func() {}) }, 1},
		"Flush twice, unchecked": {func(out *sluice.Emitter[int], _ int) { out.Flush(); out.Flush() }, 1},
		"no Flush (chunks fill)": {func(*sluice.Emitter[int], int) {}, sluice.DefaultChunk},
	}
	for name, pat := range patterns {
		for _, how := range []string{"Drain", "DrainOn"} {
			t.Run(name+"/"+how, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					sig, term := context.WithCancel(t.Context())
					defer term()
					// A drain that never finishes fails at the timeout.
					ctx, cancel := context.WithTimeout(t.Context(), time.Second)
					defer cancel()
					p := sluice.New(ctx)
					if how == "DrainOn" {
						p.DrainOn(sig)
					}
					var accepted, afterDrain int
					src := sluice.From(p, "gen", func(ctx context.Context, out *sluice.Emitter[int]) error {
						for i := 0; ; i++ {
							if ctx.Err() != nil { // as every generator must
								return ctx.Err()
							}
							// Done is closed once the drain has begun.
							drained := false
							select {
							case <-out.Done():
								drained = true
							default:
							}
							if !out.Send(i) {
								return nil
							}
							accepted++
							if drained {
								afterDrain++
							}
							pat.flush(out, i)
							time.Sleep(10 * time.Microsecond)
						}
					})
					got := sluice.Collect(p, "c", src)
					time.AfterFunc(time.Millisecond+time.Microsecond, func() {
						if how == "DrainOn" {
							term() // a SIGTERM, say
						} else {
							p.Drain()
						}
					})
					if err := p.Wait(); err != nil {
						t.Fatalf("Wait returned %v, want nil: the drain must end the generator", err)
					}
					if !slices.Equal(got.Value(), ints(accepted)) {
						t.Fatalf("got %d items (%v…), want the %d Send accepted, in order", len(got.Value()), head(got.Value()), accepted)
					}
					if afterDrain > pat.most {
						t.Fatalf("Send accepted %d items after the drain, want at most %d (up to the next chunk boundary)", afterDrain, pat.most)
					}
				})
			})
		}
	}
}

// TestToSeqLoopEndsAtTheItemAfterACancel: the loop is handed runs of
// items, yet once the parent's cancel has returned it yields no more.
func TestToSeqLoopEndsAtTheItemAfterACancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	p := sluice.New(ctx)
	after := 0
	cancelled := false
	for v := range sluice.ToSeq(p, "out", sluice.FromSlice(p, "src", ints(10_000))) {
		if cancelled {
			after++
		}
		if v == 100 {
			cancel()
			cancelled = true
		}
	}
	if err := p.Wait(); err != context.Canceled || after != 0 {
		t.Fatalf("Wait: %v, %d items after the cancel; want context.Canceled and none", err, after)
	}
}
