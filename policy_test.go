package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// The per-item error policies, run through the contract harness: every
// stage kind with a function that returns an error × workers {1, 4}.

var errBad = errors.New("bad item")

// isBad picks the items the policy tests fail.
func isBad(v int) bool { return v%10 == 3 }

// forEachPolicyStage runs check for every harness row whose stage settles
// items under the error options.
func forEachPolicyStage(t *testing.T, check func(t *testing.T, row stageRow, n int)) {
	forEachStage(t, func(t *testing.T, row stageRow, n int) {
		if !row.policies {
			t.Skip("the stage has no per-item function")
		}
		check(t, row, n)
	})
}

// goodAndBad splits 0..n-1 into the items isBad keeps and the rest.
func goodAndBad(n int) (good, bad []int) {
	for v := range n {
		if isBad(v) {
			bad = append(bad, v)
		} else {
			good = append(good, v)
		}
	}
	return good, bad
}

// stageStats returns the snapshot of the stage named "stage".
func stageStats(t *testing.T, p *sluice.Pipeline) sluice.StageStats {
	t.Helper()
	for _, s := range p.Stats().Stages {
		if s.Name == "stage" {
			return s
		}
	}
	t.Fatal("no stage named stage")
	return sluice.StageStats{}
}

// runPolicy builds row with h and opts, waits, and checks that exactly the
// good items came out (and reached the hook successfully).
func runPolicy(t *testing.T, p *sluice.Pipeline, row stageRow, n int, h hook, opts ...sluice.StageOption) {
	t.Helper()
	var rec recorder
	out := row.build(p, ints(harnessItems), n, func(ctx context.Context, v int) error {
		if err := h(ctx, v); err != nil {
			return err
		}
		return rec.hook(ctx, v)
	}, opts...)
	if err := p.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	good, _ := goodAndBad(harnessItems)
	checkExactlyOnce(t, rec.seen, good)
	if out != nil {
		checkExactlyOnce(t, out(), good)
	}
}

func failBad(_ context.Context, v int) error {
	if isBad(v) {
		return errBad
	}
	return nil
}

func TestSkipErrorsDropsAndCountsFailedItems(t *testing.T) {
	forEachPolicyStage(t, func(t *testing.T, row stageRow, n int) {
		p := sluice.New(t.Context())
		runPolicy(t, p, row, n, failBad, sluice.SkipErrors())
		_, bad := goodAndBad(harnessItems)
		if st := stageStats(t, p); st.Failed != int64(len(bad)) || st.Retries != 0 {
			t.Fatalf("Failed %d, Retries %d; want %d and 0", st.Failed, st.Retries, len(bad))
		}
	})
}

func TestDeadLetterRoutesEveryFailedItemOnce(t *testing.T) {
	forEachPolicyStage(t, func(t *testing.T, row stageRow, n int) {
		p := sluice.New(t.Context())
		var dead sluice.Stream[sluice.Failed[int]]
		var letters *sluice.Result[[]sluice.Failed[int]]
		var once sync.Once
		// The stage fills dead when it is built, inside row.build; the
		// first call of the hook comes after that.
		opt := sluice.DeadLetter(&dead)
		build := row.build
		row.build = func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int {
			out := build(p, xs, n, h, opts...)
			once.Do(func() { letters = sluice.Collect(p, "dead", dead) })
			return out
		}
		runPolicy(t, p, row, n, failBad, opt)
		_, bad := goodAndBad(harnessItems)
		var got []int
		for _, f := range letters.Value() {
			if !errors.Is(f.Err, errBad) || f.Stage != "stage" || f.Attempts != 1 {
				t.Fatalf("dead letter %+v: want errBad from stage %q after 1 attempt", f, "stage")
			}
			got = append(got, f.Item)
		}
		checkExactlyOnce(t, got, bad)
		if st := stageStats(t, p); st.Failed != int64(len(bad)) {
			t.Fatalf("Failed %d, want %d", st.Failed, len(bad))
		}
	})
}

// attempts counts calls per item and fails the bad ones until their
// attempt number exceeds failures.
type attempts struct {
	mu    sync.Mutex
	calls map[int]int
}

func (a *attempts) hook(failures int, err error) hook {
	a.calls = make(map[int]int)
	return func(_ context.Context, v int) error {
		a.mu.Lock()
		a.calls[v]++
		k := a.calls[v]
		a.mu.Unlock()
		if isBad(v) && k <= failures {
			return err
		}
		return nil
	}
}

func TestRetryRecoversItemsThatFailAFewTimes(t *testing.T) {
	forEachPolicyStage(t, func(t *testing.T, row stageRow, n int) {
		p := sluice.New(t.Context())
		var a attempts
		h := a.hook(2, errBad)
		var rec recorder
		start := time.Now()
		out := row.build(p, ints(harnessItems), n, func(ctx context.Context, v int) error {
			if err := h(ctx, v); err != nil {
				return err
			}
			return rec.hook(ctx, v)
		}, sluice.Retry(3, time.Millisecond, 10*time.Millisecond))
		if err := p.Wait(); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		checkExactlyOnce(t, rec.seen, ints(harnessItems))
		if out != nil {
			checkExactlyOnce(t, out(), ints(harnessItems))
		}
		_, bad := goodAndBad(harnessItems)
		if st := stageStats(t, p); st.Retries != int64(2*len(bad)) || st.Failed != 0 {
			t.Fatalf("Retries %d, Failed %d; want %d and 0", st.Retries, st.Failed, 2*len(bad))
		}
		// Two waits of under 1 ms and 2 ms per bad item, spread over the
		// workers: far under a second of fake time.
		if took := time.Since(start); took <= 0 || took > time.Duration(len(bad))*3*time.Millisecond {
			t.Fatalf("took %v of fake time", took)
		}
	})
}

func TestRetryGivesUpAfterItsAttemptsAndStopsAtPermanentErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int // attempts in the dead letter
	}{
		{"transient", errBad, 3},
		{"permanent", sluice.Permanent(errBad), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachPolicyStage(t, func(t *testing.T, row stageRow, n int) {
				p := sluice.New(t.Context())
				var a attempts
				var dead sluice.Stream[sluice.Failed[int]]
				var letters *sluice.Result[[]sluice.Failed[int]]
				build := row.build
				row.build = func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int {
					out := build(p, xs, n, h, opts...)
					letters = sluice.Collect(p, "dead", dead)
					return out
				}
				runPolicy(t, p, row, n, a.hook(1000, tc.err), sluice.Retry(3, 0, time.Millisecond), sluice.DeadLetter(&dead))
				for _, f := range letters.Value() {
					if f.Attempts != tc.want || !errors.Is(f.Err, errBad) || a.calls[f.Item] != tc.want {
						t.Fatalf("dead letter %+v after %d calls, want %d attempts", f, a.calls[f.Item], tc.want)
					}
				}
				if _, bad := goodAndBad(harnessItems); len(letters.Value()) != len(bad) {
					t.Fatalf("%d dead letters, want %d", len(letters.Value()), len(bad))
				}
			})
		})
	}
}

func TestTimeoutFailsSlowCalls(t *testing.T) {
	forEachPolicyStage(t, func(t *testing.T, row stageRow, n int) {
		p := sluice.New(t.Context())
		start := time.Now()
		runPolicy(t, p, row, n, func(ctx context.Context, v int) error {
			if !isBad(v) {
				return nil
			}
			<-ctx.Done() // a call that hangs until its deadline
			return ctx.Err()
		}, sluice.Timeout(50*time.Millisecond), sluice.SkipErrors())
		_, bad := goodAndBad(harnessItems)
		if st := stageStats(t, p); st.Failed != int64(len(bad)) {
			t.Fatalf("Failed %d, want %d", st.Failed, len(bad))
		}
		if took, most := time.Since(start), time.Duration(len(bad))*50*time.Millisecond; took > most {
			t.Fatalf("took %v, want at most %v", took, most)
		}
	})
}

// A retry's wait ends at once when the pipeline stops.
func TestRetryWaitEndsWhenThePipelineStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		p := sluice.New(ctx)
		start := time.Now()
		sluice.ForEach(p, "stage", sluice.FromSlice(p, "src", ints(1)), 1, func(context.Context, int) error {
			time.AfterFunc(time.Second, cancel)
			return errBad
		}, sluice.Retry(5, time.Hour, time.Hour))
		if err := p.Wait(); err != context.Canceled {
			t.Fatalf("Wait returned %v, want context.Canceled", err)
		}
		if took := time.Since(start); took != time.Second {
			t.Fatalf("took %v, want 1s: the backoff must end at the cancel", took)
		}
	})
}

// ForEachChunk settles a failed call's whole chunk: the call is retried,
// then every item of the chunk is dead-lettered.
func TestForEachChunkDeadLettersTheWholeChunk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(t.Context())
		var dead sluice.Stream[sluice.Failed[int]]
		var mu sync.Mutex
		var stored []int
		sluice.ForEachChunk(p, "stage", sluice.FromSlice(p, "src", ints(1000), sluice.Chunk(10)), 2, func(_ context.Context, items []int) error {
			if slices.ContainsFunc(items, isBad) && items[0]%20 == 0 {
				return errBad
			}
			mu.Lock()
			stored = append(stored, items...)
			mu.Unlock()
			return nil
		}, sluice.Retry(2, 0, time.Millisecond), sluice.DeadLetter(&dead))
		letters := sluice.Collect(p, "dead", dead)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		var lettered []int
		for _, f := range letters.Value() {
			if f.Attempts != 2 {
				t.Fatalf("dead letter %+v, want 2 attempts", f)
			}
			lettered = append(lettered, f.Item)
		}
		checkExactlyOnce(t, append(stored, lettered...), ints(1000))
		if len(lettered) != 500 {
			t.Fatalf("%d items dead-lettered, want the 500 of the failing chunks", len(lettered))
		}
	})
}

func TestErrorOptionsMisuse(t *testing.T) {
	var wrong sluice.Stream[sluice.Failed[string]]
	cases := []struct {
		name  string
		build func(p *sluice.Pipeline)
		parts []string
	}{
		{"dead letter of another type", func(p *sluice.Pipeline) {
			sluice.Map(p, "m", sluice.FromSlice(p, "s", ints(1)), 1, double, sluice.DeadLetter(&wrong))
		}, []string{"sluice", `stage "m"`, "Failed[string]", "int"}},
		{"policy on a stage without a function", func(p *sluice.Pipeline) {
			sluice.Batch(p, "b", sluice.FromSlice(p, "s", ints(1)), 2, 0, sluice.SkipErrors())
		}, []string{"sluice", `Batch "b"`, "SkipErrors()", "applies only to stages with a function"}},
		{"retry attempts", func(p *sluice.Pipeline) { mapWith(p, sluice.Retry(0, 0, 0)) }, []string{`sluice: Map "m": Retry`, "got 0"}},
		{"retry delays", func(p *sluice.Pipeline) { mapWith(p, sluice.Retry(2, time.Second, time.Millisecond)) }, []string{`sluice: Map "m": Retry`, "base 1s"}},
		{"timeout", func(p *sluice.Pipeline) { mapWith(p, sluice.Timeout(0)) }, []string{`sluice: Map "m": Timeout`, "got 0s"}},
		{"nil dead letter", func(p *sluice.Pipeline) { mapWith(p, sluice.DeadLetter[int](nil)) }, []string{`sluice: Map "m": DeadLetter`, "nil"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := sluice.New(context.Background())
			mustPanic(t, func() { tc.build(p) }, tc.parts...)
			cancelAndDrain(p)
		})
	}
}

// A failed item is handed on to the dead-letter stream when the stage would
// otherwise wait for input, as its results are: a trickle of input does not
// hold failures back until the input ends.
func TestDeadLettersAreHandedOnWhenTheStageIdles(t *testing.T) {
	bad := func(_ context.Context, v int) (int, error) { return v, errBad }
	stages := map[string]func(p *sluice.Pipeline, in sluice.Stream[int], n int, opt sluice.StageOption) sluice.Stream[int]{
		"Map": func(p *sluice.Pipeline, in sluice.Stream[int], n int, opt sluice.StageOption) sluice.Stream[int] {
			return sluice.Map(p, "stage", in, n, bad, opt)
		},
		"OrderedMap": func(p *sluice.Pipeline, in sluice.Stream[int], n int, opt sluice.StageOption) sluice.Stream[int] {
			return sluice.OrderedMap(p, "stage", in, n, bad, opt)
		},
	}
	for name, build := range stages {
		for _, n := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/workers=%d", name, n), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					p := sluice.New(t.Context())
					ch := make(chan int)
					var dead sluice.Stream[sluice.Failed[int]]
					out := build(p, sluice.FromChan(p, "src", ch), n, sluice.DeadLetter(&dead))
					sluice.Collect(p, "out", out)
					var failed atomic.Int64
					sluice.ForEach(p, "dead", dead, 1, func(context.Context, sluice.Failed[int]) error {
						failed.Add(1)
						return nil
					})
					for i := range 3 {
						ch <- i
						synctest.Wait() // the pipeline is idle again
						if got := failed.Load(); got != int64(i+1) {
							t.Fatalf("after %d failed items and an idle input, %d reached the dead-letter stream", i+1, got)
						}
					}
					close(ch)
					if err := p.Wait(); err != nil {
						t.Fatal(err)
					}
				})
			})
		}
	}
}

// Under every error policy, a parent cancel stops the stage as it does
// without one: the function's ctx.Err() is an echo of the stop, not a
// failed item to skip, retry or dead-letter; Wait returns the parent's
// cause; and no call comes after the stop is noticed.
func TestPoliciesStopAtAParentCancelWithItsCause(t *testing.T) {
	cause := errors.New("shutting down")
	for name, opts := range map[string][]sluice.StageOption{
		"skip":             {sluice.SkipErrors()},
		"retry":            {sluice.Retry(3, time.Millisecond, time.Second), sluice.SkipErrors()},
		"timeout":          {sluice.Timeout(time.Second), sluice.SkipErrors()},
		"retry, then fail": {sluice.Retry(2, 0, 0)},
		"retry forever":    {sluice.Retry(1<<30, time.Millisecond, time.Millisecond)},
	} {
		t.Run(name, func(t *testing.T) {
			forEachPolicyStage(t, func(t *testing.T, row stageRow, n int) {
				ctx, cancel := context.WithCancelCause(t.Context())
				defer cancel(nil)
				p := sluice.New(ctx)
				var late atomic.Int64
				var noticed atomic.Bool
				at, gate := make(chan struct{}), make(chan struct{})
				out := row.build(p, ints(harnessItems), n, func(ctx context.Context, v int) error {
					if noticed.Load() {
						late.Add(1)
					}
					if v == 100 {
						close(at)
						<-gate
					}
					return ctx.Err()
				}, opts...)
				<-at
				cancel(cause)
				synctest.Wait() // the stop is noticed
				noticed.Store(true)
				close(gate)
				if err := p.Wait(); err != cause {
					t.Fatalf("Wait returned %v, want the parent's cause", err)
				}
				if got := late.Load(); got != 0 {
					t.Fatalf("%d calls after the stop was noticed, want 0", got)
				}
				if out != nil {
					out()
				}
			})
		})
	}
}

// Retry's waits follow exponential backoff with full jitter: the wait
// before retry k is below min(maxDelay, base·2^(k-1)), and not always 0.
func TestRetryBackoffStaysWithinItsBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const base, maxDelay, tries = time.Millisecond, 5 * time.Millisecond, 7
		p := sluice.New(t.Context())
		calls := make(map[int][]time.Time)
		var dead sluice.Stream[sluice.Failed[int]]
		sluice.ForEach(p, "stage", sluice.FromSlice(p, "src", ints(200)), 1, func(_ context.Context, v int) error {
			calls[v] = append(calls[v], time.Now())
			return errBad
		}, sluice.Retry(tries, base, maxDelay), sluice.DeadLetter(&dead))
		letters := sluice.Collect(p, "dead", dead)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if len(letters.Value()) != 200 {
			t.Fatalf("got %d dead letters, want 200", len(letters.Value()))
		}
		var waited time.Duration
		for v, at := range calls {
			if len(at) != tries {
				t.Fatalf("item %d: %d calls, want %d", v, len(at), tries)
			}
			for k := 1; k < tries; k++ {
				ceil := min(maxDelay, base<<(k-1))
				if d := at[k].Sub(at[k-1]); d < 0 || d >= ceil {
					t.Fatalf("item %d: waited %v before retry %d, want [0, %v)", v, d, k, ceil)
				}
				waited += at[k].Sub(at[k-1])
			}
		}
		if st := stageStats(t, p); st.Retries != 200*(tries-1) || st.Failed != 200 {
			t.Fatalf("Retries %d, Failed %d; want %d and 200", st.Retries, st.Failed, 200*(tries-1))
		}
		if waited == 0 {
			t.Fatal("every backoff was 0")
		}
	})
}

// A call that fails because its Timeout expired says so: the error names
// the Timeout, and still wraps context.DeadlineExceeded.
func TestTimeoutErrorSaysTheCallTimedOut(t *testing.T) {
	forEachPolicyStage(t, func(t *testing.T, row stageRow, n int) {
		p := sluice.New(t.Context())
		out := row.build(p, ints(harnessItems), n, func(ctx context.Context, v int) error {
			if v != 100 {
				return nil
			}
			<-ctx.Done() // a call that hangs until its deadline
			return ctx.Err()
		}, sluice.Timeout(50*time.Millisecond))
		err := p.Wait()
		var se *sluice.StageError
		if !errors.As(err, &se) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "Timeout(50ms)") {
			t.Fatalf("Wait returned %v, want a *StageError naming Timeout(50ms) and wrapping context.DeadlineExceeded", err)
		}
		if out != nil {
			out()
		}
	})
}

// A drain does not wait out long retry backoffs: once its grace period
// (DefaultDrainGrace unless DrainGrace says otherwise) has passed, waiting
// retries end and their items are settled by the stage's policy —
// dead-lettered, skipped, or failing the pipeline with their last error.
func TestDrainEndsRetriesAfterItsGrace(t *testing.T) {
	const grace = sluice.DefaultDrainGrace
	for _, policy := range []string{"dead-letter", "skip", "fail"} {
		t.Run(policy, func(t *testing.T) {
			forEachPolicyStage(t, func(t *testing.T, row stageRow, n int) {
				p := sluice.New(t.Context())
				opts := []sluice.StageOption{sluice.Retry(10, time.Second, 30*time.Second)}
				var dead sluice.Stream[sluice.Failed[int]]
				var letters *sluice.Result[[]sluice.Failed[int]]
				switch policy {
				case "dead-letter":
					opts = append(opts, sluice.DeadLetter(&dead))
					build := row.build
					row.build = func(p *sluice.Pipeline, xs []int, n int, h hook, opts ...sluice.StageOption) func() []int {
						out := build(p, xs, n, h, opts...)
						letters = sluice.Collect(p, "dead", dead)
						return out
					}
				case "skip":
					opts = append(opts, sluice.SkipErrors())
				}
				var mu sync.Mutex
				var drained time.Time
				failed := make(map[int]bool) // the items that failed, all after the drain
				out := row.build(p, ints(harnessItems), n, func(_ context.Context, v int) error {
					mu.Lock()
					defer mu.Unlock()
					if v == 100 {
						drained = time.Now()
						p.Drain()
					}
					if v > 100 && isBad(v) {
						failed[v] = true
						return errBad
					}
					return nil
				}, opts...)
				err := p.Wait()
				if took := time.Since(drained); took > grace {
					t.Fatalf("Wait returned %v after the drain, want at most the grace period, %v", took, grace)
				}
				if out != nil {
					out()
				}
				if len(failed) == 0 {
					t.Fatal("no item failed after the drain")
				}
				var se *sluice.StageError
				switch policy {
				case "fail":
					if !errors.Is(err, errBad) || !errors.As(err, &se) || se.Stage != "stage" {
						t.Fatalf("Wait returned %v, want a *StageError from stage %q wrapping the item's last error, %v", err, "stage", errBad)
					}
					return
				case "dead-letter":
					var got, want []int
					for _, f := range letters.Value() {
						if !errors.Is(f.Err, errBad) || f.Attempts < 1 || f.Attempts > 10 {
							t.Fatalf("dead letter %+v, want errBad after 1 to 10 attempts", f)
						}
						got = append(got, f.Item)
					}
					for v := range failed {
						want = append(want, v)
					}
					checkExactlyOnce(t, got, want)
				}
				if err != nil {
					t.Fatalf("Wait: %v", err)
				}
				if st := stageStats(t, p); st.Failed != int64(len(failed)) {
					t.Fatalf("Failed %d, want the %d items that failed", st.Failed, len(failed))
				}
			})
		})
	}
}

// A backoff already waiting when the drain begins ends with the grace
// period DrainGrace sets, counted from the drain (here a SIGTERM through
// DrainOn); DrainGrace(0) ends it at once.
func TestDrainGraceEndsABackoffAlreadyWaiting(t *testing.T) {
	for _, grace := range []time.Duration{0, 2 * time.Second, time.Minute} {
		t.Run(grace.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sig, term := context.WithCancel(t.Context())
				defer term()
				p := sluice.New(t.Context(), sluice.DrainGrace(grace))
				p.DrainOn(sig)
				var dead sluice.Stream[sluice.Failed[int]]
				calls := 0
				sluice.ForEach(p, "stage", sluice.FromSlice(p, "src", ints(1)), 1, func(context.Context, int) error {
					calls++
					return errBad
				}, sluice.Retry(10, 10*time.Second, 10*time.Minute), sluice.DeadLetter(&dead))
				letters := sluice.Collect(p, "dead", dead)
				const termAt = 3 * time.Second // during the first backoff, or just after it
				time.AfterFunc(termAt, term)
				start := time.Now()
				if err := p.Wait(); err != nil {
					t.Fatal(err)
				}
				want := termAt + grace
				if grace == time.Minute {
					want = 0 // the retries may run out first: check the bound only
				}
				if took := time.Since(start); took > termAt+grace || want > 0 && took != want {
					t.Fatalf("Wait returned after %v, want %v: the drain at %v plus its grace, %v", took, termAt+grace, termAt, grace)
				}
				if f := letters.Value(); len(f) != 1 || f[0].Attempts != calls || !errors.Is(f[0].Err, errBad) {
					t.Fatalf("dead letters %+v after %d calls, want the item with errBad and its attempts", f, calls)
				}
				if grace < time.Minute && calls >= 10 {
					t.Fatalf("%d calls, want fewer than 10: the grace must end the retries", calls)
				}
			})
		})
	}
}

func TestDrainGraceMisuse(t *testing.T) {
	mustPanic(t, func() { sluice.DrainGrace(-time.Second) }, "sluice: DrainGrace", "got -1s")
}

// mapWith builds a Map stage "m" given opt: a bad option's panic names
// the stage it was given to.
func mapWith(p *sluice.Pipeline, opt sluice.StageOption) {
	sluice.Map(p, "m", sluice.FromSlice(p, "s", ints(1)), 1, double, opt)
}
