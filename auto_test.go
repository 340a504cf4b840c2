package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

func TestAutoPanicsOnBadBounds(t *testing.T) {
	mustPanic(t, func() { sluice.Auto(0, 4) }, "sluice: Auto(0, 4)")
	mustPanic(t, func() { sluice.Auto(5, 4) }, "sluice: Auto(5, 4)")
	mustPanic(t, func() { sluice.Auto(1, 1<<20) }, "sluice: Auto(1, 1048576)", "4096")
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
