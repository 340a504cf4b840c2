package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sluicehq/sluice"
)

func ExampleDeadLetter() {
	p := sluice.New(context.Background())
	lines := sluice.FromSlice(p, "lines", []string{"1", "two", "3", "4x"})
	var bad sluice.Stream[sluice.Failed[string]]
	nums := sluice.Map(p, "parse", lines, 1, func(_ context.Context, s string) (int, error) {
		return strconv.Atoi(s)
	}, sluice.DeadLetter(&bad))
	sum := sluice.Reduce(p, "sum", nums, 0, func(a, v int) int { return a + v })
	sluice.ForEach(p, "log-bad", bad, 1, func(_ context.Context, f sluice.Failed[string]) error {
		fmt.Printf("stage %s dropped %q after %d attempt(s)\n", f.Stage, f.Item, f.Attempts)
		return nil
	})
	err := p.Wait()
	fmt.Println("sum:", sum.Value(), err)
	// Output:
	// stage parse dropped "two" after 1 attempt(s)
	// stage parse dropped "4x" after 1 attempt(s)
	// sum: 4 <nil>
}

func ExampleSkipErrors() {
	p := sluice.New(context.Background())
	nums := sluice.Map(p, "parse", sluice.FromSlice(p, "lines", []string{"1", "x", "2"}), 1,
		func(_ context.Context, s string) (int, error) { return strconv.Atoi(s) }, sluice.SkipErrors())
	got := sluice.Collect(p, "keep", nums)
	err := p.Wait()
	fmt.Println(got.Value(), err, "failed:", p.Stats().Stages[1].Failed)
	// Output: [1 2] <nil> failed: 1
}

func ExampleRetry() {
	p := sluice.New(context.Background())
	calls := 0
	flaky := func(_ context.Context, v int) (int, error) {
		if calls++; calls < 3 {
			return 0, errors.New("try again")
		}
		return v * 10, nil
	}
	out := sluice.Map(p, "flaky", sluice.FromSlice(p, "src", []int{7}), 1, flaky,
		sluice.Retry(5, time.Millisecond, 10*time.Millisecond))
	got := sluice.Collect(p, "c", out)
	err := p.Wait()
	fmt.Println(got.Value(), err, "retries:", p.Stats().Stages[1].Retries)
	// Output: [70] <nil> retries: 2
}

func ExamplePermanent() {
	p := sluice.New(context.Background())
	calls := 0
	sluice.ForEach(p, "store", sluice.FromSlice(p, "src", []int{1}), 1, func(context.Context, int) error {
		calls++
		return sluice.Permanent(errors.New("record rejected"))
	}, sluice.Retry(5, time.Millisecond, time.Second))
	err := p.Wait()
	fmt.Println(err, "calls:", calls, sluice.IsPermanent(err))
	// Output: sluice: stage "store": record rejected calls: 1 true
}

func ExampleTimeout() {
	p := sluice.New(context.Background())
	out := sluice.Map(p, "lookup", sluice.FromSlice(p, "src", []int{1, 2, 3}), 3, func(ctx context.Context, v int) (int, error) {
		if v == 2 {
			<-ctx.Done() // a call that hangs
			return 0, ctx.Err()
		}
		return v, nil
	}, sluice.Timeout(10*time.Millisecond), sluice.SkipErrors())
	got := sluice.Collect(p, "c", out)
	err := p.Wait()
	fmt.Println(len(got.Value()), err, "failed:", p.Stats().Stages[1].Failed)
	// Output: 2 <nil> failed: 1
}

func ExamplePipeline_Drain() {
	p := sluice.New(context.Background())
	src := sluice.From(p, "endless", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := 1; ; i++ {
			select {
			case <-out.Done(): // closed once the pipeline drains
				return nil
			default:
			}
			if !out.Send(i) {
				return nil
			}
			if i == 3 {
				p.Drain() // say, on SIGTERM: take nothing new, finish what is inside
			}
		}
	})
	got := sluice.Collect(p, "c", src)
	err := p.Wait()
	fmt.Println(got.Value(), err)
	// Output: [1 2 3] <nil>
}

// A drain bounds retries: a store that is down would be retried for
// hours, but 50 ms into the drain its backoff ends and the item is
// dead-lettered with its last error.
func ExampleDrainGrace() {
	p := sluice.New(context.Background(), sluice.DrainGrace(50*time.Millisecond))
	var dead sluice.Stream[sluice.Failed[string]]
	start := time.Now()
	sluice.ForEach(p, "store", sluice.FromSlice(p, "src", []string{"order 1"}), 1, func(context.Context, string) error {
		p.Drain() // a SIGTERM arrives while the store is down
		return errors.New("store down")
	}, sluice.Retry(10, time.Hour, time.Hour), sluice.DeadLetter(&dead))
	letters := sluice.Collect(p, "dead", dead)
	err := p.Wait()
	f := letters.Value()[0]
	fmt.Println(f.Item, "—", f.Err, "—", err, "— in under a minute:", time.Since(start) < time.Minute)
	// Output: order 1 — retries ended by a drain after 1 attempt: store down — <nil> — in under a minute: true
}

func ExamplePipeline_DrainOn() {
	stop, drain := context.WithCancel(context.Background()) // e.g. signal.NotifyContext(ctx, syscall.SIGTERM)
	p := sluice.New(context.Background())
	p.DrainOn(stop)
	src := sluice.From(p, "ticks", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := 1; ; i++ {
			if !out.Send(i) || !out.Flush() {
				return nil
			}
			if i == 2 {
				drain()
				<-out.Done() // closed once the drain has begun
				return nil
			}
		}
	})
	got := sluice.Collect(p, "c", src)
	err := p.Wait()
	fmt.Println(got.Value(), err)
	// Output: [1 2] <nil>
}

func ExampleToSeq() {
	p := sluice.New(context.Background())
	doubled := sluice.Map(p, "double", sluice.FromSlice(p, "src", []int{1, 2, 3}), 1, func(_ context.Context, v int) (int, error) {
		return 2 * v, nil
	})
	for v := range sluice.ToSeq(p, "out", doubled) {
		fmt.Println(v)
	}
	fmt.Println(p.Wait())
	// Output:
	// 2
	// 4
	// 6
	// <nil>
}

func ExampleFromSeq2() {
	rows := func(yield func(string, error) bool) {
		for _, r := range []string{"a", "b"} {
			if !yield(r, nil) {
				return
			}
		}
		yield("", errors.New("connection reset"))
	}
	p := sluice.New(context.Background())
	sluice.ForEach(p, "print", sluice.FromSeq2(p, "rows", rows), 1, func(context.Context, string) error { return nil })
	fmt.Println(p.Wait())
	// Output: sluice: stage "rows": connection reset
}

func ExampleErrGoexit() {
	p := sluice.New(context.Background())
	sluice.ForEach(p, "check", sluice.FromSlice(p, "src", []int{1}), 1, func(context.Context, int) error {
		exitGoroutine() // what t.Fatal does when called inside a stage
		return nil
	})
	fmt.Println(errors.Is(p.Wait(), sluice.ErrGoexit))
	// Output: true
}
