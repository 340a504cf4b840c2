package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

func TestAutoPanicsOnBadBounds(t *testing.T) {
	mustPanic(t, func() { mapWith(sluice.New(t.Context()), sluice.Auto(0, 4)) }, `sluice: Map "m": Auto(0, 4)`)
	mustPanic(t, func() { mapWith(sluice.New(t.Context()), sluice.Auto(5, 4)) }, `sluice: Map "m": Auto(5, 4)`)
	mustPanic(t, func() { mapWith(sluice.New(t.Context()), sluice.Auto(1, 1<<20)) }, `sluice: Map "m": Auto(1, 1048576)`, "4096")
	p := sluice.New(t.Context())
	mustPanic(t, func() {
		sluice.Map(p, "m", sluice.FromSlice(p, "src", ints(3)), 8, double, sluice.Auto(1, 4))
	}, `stage "m"`, "Auto(1, 4)", "got 8")
	p = sluice.New(t.Context())
	mustPanic(t, func() {
		sluice.Batch(p, "b", sluice.FromSlice(p, "src", ints(3)), 10, time.Millisecond, sluice.Auto(1, 4))
	}, `Batch "b"`, "Auto(1, 4)", "pool")
}

func TestAutoStatsShowTheCountAndWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(t.Context())
		m := sluice.Map(p, "m", sluice.FromSlice(p, "src", ints(10)), 2, double, sluice.Auto(1, 8))
		sluice.Collect(p, "out", m)
		var st sluice.StageStats
		for _, s := range p.Stats().Stages {
			if s.Name == "m" {
				st = s
			}
		}
		if st.Workers != 2 || st.Auto == nil || st.Auto.Min != 1 || st.Auto.Max != 8 || st.Auto.Reason != sluice.AutoStart || st.Auto.Changed.IsZero() {
			t.Fatalf("got Workers %d, Auto %+v; want 2 workers, bounds 1–8, reason %q and its time", st.Workers, st.Auto, sluice.AutoStart)
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		for _, s := range p.Stats().Stages {
			if s.Name == "src" && s.Auto != nil {
				t.Fatalf("a source's Auto = %+v, want nil", s.Auto)
			}
		}
	})
}

// tokens is a fake limiter: one call every gap, as a token bucket with a
// burst of one does.
type tokens struct {
	gap  time.Duration
	next time.Time
	fail error
}

func (l *tokens) Wait(ctx context.Context) error {
	if l.fail != nil {
		return l.fail
	}
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	d := l.next.Sub(now)
	l.next = l.next.Add(l.gap)
	if d == 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// lockedTokens serializes a tokens for a stage's workers.
type lockedTokens struct {
	mu chan struct{}
	l  *tokens
}

func (l lockedTokens) Wait(ctx context.Context) error {
	l.mu <- struct{}{}
	defer func() { <-l.mu }()
	return l.l.Wait(ctx)
}

func TestThrottleKeepsTheRateAndCountsTheWait(t *testing.T) {
	for _, row := range stageRows {
		if !row.policies && row.name != "ForEachChunk" {
			continue
		}
		t.Run(row.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lim := lockedTokens{make(chan struct{}, 1), &tokens{gap: 10 * time.Millisecond}}
				p := sluice.New(t.Context())
				start := time.Now()
				var calls atomic.Int64
				xs := ints(100)
				// Chunk(1): ForEachChunk waits once per call, so one
				// item per call makes every row wait per item.
				out := row.build(p, xs, 4, func(context.Context, int) error { calls.Add(1); return nil }, sluice.Throttle(lim))
				_ = out
				if err := p.Wait(); err != nil {
					t.Fatalf("Wait: %v", err)
				}
				took := time.Since(start)
				var st sluice.StageStats
				for _, s := range p.Stats().Stages {
					if s.Name == "stage" {
						st = s
					}
				}
				waits := int64(100)
				if row.name == "ForEachChunk" {
					waits = 1 // one chunk of 100: one call
				}
				if want := time.Duration(waits-1) * 10 * time.Millisecond; took < want {
					t.Fatalf("%d calls took %v, want at least %v at one call per 10 ms", calls.Load(), took, want)
				}
				if st.Throttled < time.Duration(waits-1)*10*time.Millisecond {
					t.Fatalf("Throttled %v, want at least the %v the calls waited", st.Throttled, time.Duration(waits-1)*10*time.Millisecond)
				}
				if st.Busy > st.Throttled {
					t.Fatalf("Busy %v > Throttled %v: the wait must not count as work", st.Busy, st.Throttled)
				}
			})
		})
	}
}

func TestThrottleErrorFailsThePipelinePastSkipErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broken := errors.New("burst below 1")
		p := sluice.New(t.Context())
		m := sluice.Map(p, "m", sluice.FromSlice(p, "src", ints(10)), 2, double,
			sluice.Throttle(lockedTokens{make(chan struct{}, 1), &tokens{fail: broken}}), sluice.SkipErrors())
		sluice.Collect(p, "out", m)
		err := p.Wait()
		var se *sluice.StageError
		if !errors.Is(err, broken) || !errors.As(err, &se) || se.Stage != "m" {
			t.Fatalf("Wait returned %v, want a *StageError of stage m wrapping %v", err, broken)
		}
	})
}

func TestThrottleStopsWithThePipeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		p := sluice.New(ctx)
		lim := lockedTokens{make(chan struct{}, 1), &tokens{gap: time.Hour}}
		sluice.ForEach(p, "f", sluice.FromSlice(p, "src", ints(10)), 2, func(context.Context, int) error { return nil }, sluice.Throttle(lim))
		time.Sleep(time.Second)
		cancel()
		if err := p.Wait(); err != context.Canceled {
			t.Fatalf("Wait returned %v, want context.Canceled", err)
		}
	})
}

func TestThrottlePanicsWhereItDoesNotApply(t *testing.T) {
	mustPanic(t, func() { mapWith(sluice.New(t.Context()), sluice.Throttle(nil)) }, `sluice: Map "m": Throttle: nil Limiter`)
	p := sluice.New(t.Context())
	lim := lockedTokens{make(chan struct{}, 1), &tokens{}}
	mustPanic(t, func() {
		sluice.FromSlice(p, "src", ints(3), sluice.Throttle(lim))
	}, `source "src"`, "Throttle")
}

func ExampleAuto() {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "ids", ints(1000))
	// Start with 4 workers; the engine keeps between 1 and 64, adding
	// them while fetch is the bottleneck and its calls do not slow down.
	fetched := sluice.Map(p, "fetch", src, 4, func(ctx context.Context, id int) (int, error) {
		return id * 2, nil // a call to a service, in real life
	}, sluice.Auto(1, 64))
	sum := sluice.Reduce(p, "sum", fetched, 0, func(acc, v int) int { return acc + v })
	if err := p.Wait(); err != nil {
		fmt.Println(err)
	}
	fmt.Println(sum.Value())
	// Output: 999000
}

func ExampleAutoReason() {
	for _, r := range []sluice.AutoReason{sluice.AutoStart, sluice.AutoGrow, sluice.AutoNoGain, sluice.AutoLatency,
		sluice.AutoFailing, sluice.AutoIdle, sluice.AutoThrottled, sluice.AutoProbe, 0} {
		fmt.Println(r)
	}
	// Output:
	// start
	// grow
	// no-gain
	// latency
	// failing
	// idle
	// throttled
	// probe
	// AutoReason(0)
}

func ExampleThrottle() {
	// A limiter with a Wait(ctx) error method: golang.org/x/time/rate's
	// *rate.Limiter, say rate.NewLimiter(100, 1) for 100 calls a second.
	var lim sluice.Limiter = noLimit{}
	p := sluice.New(context.Background())
	var calls atomic.Int64
	sluice.ForEach(p, "notify", sluice.FromSlice(p, "ids", ints(10)), 4, func(ctx context.Context, id int) error {
		calls.Add(1)
		return nil
	}, sluice.Throttle(lim))
	if err := p.Wait(); err != nil {
		fmt.Println(err)
	}
	fmt.Println(calls.Load())
	// Output: 10
}

type noLimit struct{}

func (noLimit) Wait(context.Context) error { return nil }

// errBusy is a dependency's answer past its capacity (a 503).
var errBusy = errors.New("busy: try again")

// refusingDep serves capacity calls at once, each in took, and refuses
// the rest at once with errBusy.
type refusingDep struct {
	capacity int64
	took     time.Duration
	inflight atomic.Int64
	served   atomic.Int64
}

func (d *refusingDep) call(_ context.Context, v int) (int, error) {
	if d.inflight.Add(1) > d.capacity {
		d.inflight.Add(-1)
		return 0, errBusy
	}
	time.Sleep(d.took)
	d.inflight.Add(-1)
	d.served.Add(1)
	return v, nil
}

// workersOf returns stage name's stats.
func workersOf(p *sluice.Pipeline, name string) sluice.StageStats {
	for _, s := range p.Stats().Stages {
		if s.Name == name {
			return s
		}
	}
	panic("no stage " + name)
}

// autoRun runs an endless source into a Map named "call" of n workers,
// and a sink, for ticks of 100 ms under synctest, and returns the
// stage's worker count at each, its stats at the end, and the items that
// reached the sink over the last third. mk makes the Map's function and
// options in the bubble: their channels must be the bubble's for their
// waits to let time pass.
func autoRun(t *testing.T, ticks, n int, mk func() (func(context.Context, int) (int, error), []sluice.StageOption)) (counts []int, end sluice.StageStats, last int64) {
	counts, _, end, last = autoRunMarked(t, ticks, n, mk)
	return counts, end, last
}

// autoRunMarked is autoRun that also returns the stage's stats at the
// start of the last third.
func autoRunMarked(t *testing.T, ticks, n int, mk func() (func(context.Context, int) (int, error), []sluice.StageOption)) (counts []int, marked, end sluice.StageStats, last int64) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		f, opts := mk()
		p := sluice.New(t.Context())
		src := sluice.From(p, "src", func(ctx context.Context, out *sluice.Emitter[int]) error {
			for i := 0; out.Send(i); i++ {
			}
			return nil
		})
		var got atomic.Int64
		sluice.ForEach(p, "sink", sluice.Map(p, "call", src, n, f, opts...), 1, func(context.Context, int) error { got.Add(1); return nil })
		var mark int64
		for i := range ticks {
			if i == ticks-ticks/3 {
				mark, marked = got.Load(), workersOf(p, "call")
			}
			time.Sleep(100 * time.Millisecond)
			counts = append(counts, workersOf(p, "call").Workers)
		}
		last = got.Load() - mark
		end = workersOf(p, "call")
		p.Drain()
		if err := p.Wait(); err != nil {
			t.Fatalf("Wait: %v", err)
		}
	})
	t.Logf("counts %v", counts)
	return counts, marked, end, last
}

// Against a dependency that refuses at once what it cannot serve, with
// Retry, Auto ends at its capacity and retries little: the errors per
// call that rose with the count shed the workers, from below or above,
// and once there it makes next to no retries.
func TestAutoShedsWorkersWhoseCallsFail(t *testing.T) {
	for _, start := range []int{1, 4, 64} {
		t.Run(fmt.Sprint("from ", start), func(t *testing.T) {
			dep := &refusingDep{capacity: 16, took: 2 * time.Millisecond}
			counts, marked, st, last := autoRunMarked(t, 60, start, func() (func(context.Context, int) (int, error), []sluice.StageOption) {
				return dep.call, []sluice.StageOption{sluice.Auto(1, 128), sluice.Retry(1000, time.Millisecond, 20*time.Millisecond)}
			})
			if tail := counts[30:]; slices.Min(tail) < 15 || slices.Max(tail) > 17 {
				t.Errorf("workers from 3 s range over %d–%d, want 15–17 (the dependency serves 16): %v", slices.Min(tail), slices.Max(tail), counts)
			}
			// The last 2 s: a step probe to 17 at most, its refused calls
			// retried for a tick.
			if r := st.Retries - marked.Retries; r > last/50 {
				t.Errorf("%d retries in the last 2 s for %d items, want at most one in 50", r, last)
			}
			// From below, the whole run's retries are those of the probes
			// past 16 (16 workers serve 8000 calls a second).
			if served := dep.served.Load(); start <= 16 && st.Retries > served/20 {
				t.Errorf("%d retries for %d calls served, want at most one in 20", st.Retries, served)
			}
			t.Logf("%d retries for %d calls served", st.Retries, dep.served.Load())
		})
	}
}

// A start far above what a dependency serves is shed, whatever the
// start: a count that does no more than a smaller one is not kept.
func TestAutoShedsAStartAboveWhatTheDependencyServes(t *testing.T) {
	for _, tc := range []struct{ capacity, start int }{{8, 32}, {2, 16}, {16, 64}} {
		t.Run(fmt.Sprintf("%d from %d", tc.capacity, tc.start), func(t *testing.T) {
			counts, _, _ := autoRun(t, 60, tc.start, func() (func(context.Context, int) (int, error), []sluice.StageOption) {
				sem := make(chan struct{}, tc.capacity)
				return func(_ context.Context, v int) (int, error) {
					sem <- struct{}{}
					time.Sleep(2 * time.Millisecond)
					<-sem
					return v, nil
				}, []sluice.StageOption{sluice.Auto(1, 256)}
			})
			hi := max(tc.capacity+tc.capacity/4, tc.capacity+1)
			if tail := counts[30:]; slices.Min(tail) < tc.capacity || slices.Max(tail) > hi {
				t.Errorf("workers from 3 s range over %d–%d, want %d–%d: %v", slices.Min(tail), slices.Max(tail), tc.capacity, hi, counts)
			}
		})
	}
}

// Workers that would only wait on a Throttle are not added back: shed to
// what the rate needs, the count stays there, and the rate holds.
func TestAutoAddsNoWorkerThatWouldWaitOnTheThrottle(t *testing.T) {
	counts, _, last := autoRun(t, 100, 16, func() (func(context.Context, int) (int, error), []sluice.StageOption) {
		lim := lockedTokens{make(chan struct{}, 1), &tokens{gap: 10 * time.Millisecond}} // 100 a second
		call := func(_ context.Context, v int) (int, error) { time.Sleep(50 * time.Millisecond); return v, nil }
		return call, []sluice.StageOption{sluice.Auto(1, 64), sluice.Throttle(lim)}
	})
	// 100 calls a second of 50 ms need 5 workers, and a margin for the
	// limiter's turns; once shed, the count never goes back to the start.
	// (The stage takes its items a chunk at a time, so that at 100 items
	// a second a tick's throughput is lumpy, and an idle shrink may be
	// taken back to a count above the need.)
	if tail := counts[40:]; slices.Min(tail) < 5 || slices.Max(tail) > 11 {
		t.Errorf("workers from 4 s range over %d–%d, want 5–11 (100 calls a second of 50 ms need 5): %v", slices.Min(tail), slices.Max(tail), counts)
	}
	if i := slices.IndexFunc(counts, func(n int) bool { return n < 16 }); i < 0 || slices.Max(counts[i:]) >= 16 {
		t.Errorf("workers %v: want them shed from 16 and never added back", counts)
	}
	if last < 300 {
		t.Errorf("%d items in the last 3.3 s, want about 330 at 100 a second", last)
	}
}
