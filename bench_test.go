package sluice_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// sumTo is the sum of 0..n-1.
func sumTo(n int) int { return n * (n - 1) / 2 }

func perItem(b *testing.B, items int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(items), "ns/item")
}

// BenchmarkEdgeHop moves items from one goroutine to another: through a
// sluice Stream (a generator sending one item at a time, a sink folding
// them) and, as the baseline, through a channel buffered 1024.
func BenchmarkEdgeHop(b *testing.B) {
	const n = 1 << 20
	b.Run("impl=chan1024", func(b *testing.B) {
		for b.Loop() {
			ch := make(chan int, 1024)
			go func() {
				for i := range n {
					ch <- i
				}
				close(ch)
			}()
			sum := 0
			for v := range ch {
				sum += v
			}
			if sum != sumTo(n) {
				b.Fatalf("got sum %d, want %d", sum, sumTo(n))
			}
		}
		perItem(b, n)
	})
	// What a careful hand-written program does: slices of 256, recycled.
	b.Run("impl=chan-of-slices", func(b *testing.B) {
		for b.Loop() {
			ch := make(chan []int, 8)
			free := make(chan []int, 16)
			go func() {
				buf := make([]int, 0, 256)
				for i := range n {
					buf = append(buf, i)
					if len(buf) == cap(buf) {
						ch <- buf
						select {
						case buf = <-free:
							buf = buf[:0]
						default:
							buf = make([]int, 0, 256)
						}
					}
				}
				if len(buf) > 0 {
					ch <- buf
				}
				close(ch)
			}()
			sum := 0
			for buf := range ch {
				for _, v := range buf {
					sum += v
				}
				select {
				case free <- buf:
				default:
				}
			}
			if sum != sumTo(n) {
				b.Fatalf("got sum %d, want %d", sum, sumTo(n))
			}
		}
		perItem(b, n)
	})
	b.Run("impl=sluice", func(b *testing.B) {
		for b.Loop() {
			p := sluice.New(context.Background())
			src := sluice.From(p, "gen", func(_ context.Context, out *sluice.Emitter[int]) error {
				for i := range n {
					if !out.Send(i) {
						return nil
					}
				}
				return nil
			})
			sum := sluice.Reduce(p, "sum", src, 0, func(a, v int) int { return a + v })
			if err := p.Wait(); err != nil || sum.Value() != sumTo(n) {
				b.Fatalf("got sum %d, err %v; want %d", sum.Value(), err, sumTo(n))
			}
		}
		perItem(b, n)
	})
}

// BenchmarkMapVsOrderedMap compares the two worker pools on a trivial
// function, so that what is measured is their machinery.
func BenchmarkMapVsOrderedMap(b *testing.B) {
	const n = 1 << 20
	xs := ints(n)
	for _, workers := range []int{1, 2, 4} {
		for _, ordered := range []bool{false, true} {
			name := fmt.Sprintf("workers=%d/stage=Map", workers)
			if ordered {
				name = fmt.Sprintf("workers=%d/stage=OrderedMap", workers)
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					p := sluice.New(context.Background())
					src := sluice.FromSlice(p, "src", xs)
					var m sluice.Stream[int]
					if ordered {
						m = sluice.OrderedMap(p, "inc", src, workers, func(_ context.Context, v int) (int, error) { return v + 1, nil })
					} else {
						m = sluice.Map(p, "inc", src, workers, func(_ context.Context, v int) (int, error) { return v + 1, nil })
					}
					sum := sluice.Reduce(p, "sum", m, 0, func(a, v int) int { return a + v })
					if err := p.Wait(); err != nil || sum.Value() != sumTo(n)+n {
						b.Fatalf("got sum %d, err %v; want %d", sum.Value(), err, sumTo(n)+n)
					}
				}
				perItem(b, n)
			})
		}
	}
}

// BenchmarkBatchTrickleLatency feeds Batch one item at a time with gaps, so
// that every batch leaves by its time limit, and reports how long items
// waited beyond maxWait: p50 and p99 of (arrival of the batch − send of its
// first item − maxWait).
func BenchmarkBatchTrickleLatency(b *testing.B) {
	const maxWait = 5 * time.Millisecond
	for b.Loop() {
		in := make(chan time.Time)
		p := sluice.New(context.Background())
		out := sluice.ToChan(p, "out", sluice.Batch(p, "batch", sluice.FromChan(p, "src", in), 1000, maxWait))
		var extra []time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			for batch := range out {
				extra = append(extra, time.Since(batch[0])-maxWait)
			}
		}()
		items := 0
		for range 40 {
			for range 3 {
				in <- time.Now()
				items++
				time.Sleep(200 * time.Microsecond)
			}
			time.Sleep(maxWait) // let the batch leave by its deadline
		}
		close(in)
		<-done
		if err := p.Wait(); err != nil {
			b.Fatal(err)
		}
		if len(extra) == 0 {
			b.Fatal("no batches arrived")
		}
		slices.Sort(extra)
		b.ReportMetric(float64(extra[len(extra)/2].Microseconds()), "p50-extra-µs")
		b.ReportMetric(float64(extra[len(extra)*99/100].Microseconds()), "p99-extra-µs")
	}
}

// BenchmarkSlowItemsAcrossWorkers shows what adaptive chunk sizes buy a
// worker pool of slow items from a fast source: 400 items that each sleep
// 200 µs (the sleep itself may last longer, ~1 ms on a VM) through 8
// workers, with adaptive chunks and with the fixed chunks of 256 that were
// the default before (Chunk(256)): those give all 400 items to two
// workers. It reports the wall time per item; ideal is a sleep's length
// divided by 8.
func BenchmarkSlowItemsAcrossWorkers(b *testing.B) {
	const n, workers = 400, 8
	for _, c := range []struct {
		name string
		opts []sluice.StageOption
	}{
		{"chunks=adaptive", nil},
		{"chunks=256", []sluice.StageOption{sluice.Chunk(256)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				p := sluice.New(context.Background())
				src := sluice.FromSlice(p, "src", make([]int, n), c.opts...)
				out := sluice.Map(p, "slow", src, workers, func(_ context.Context, v int) (int, error) {
					time.Sleep(200 * time.Microsecond)
					return v + 1, nil
				})
				sum := sluice.Reduce(p, "sum", out, 0, func(a, v int) int { return a + v })
				if err := p.Wait(); err != nil || sum.Value() != n {
					b.Fatalf("got sum %d, err %v; want %d", sum.Value(), err, n)
				}
			}
			perItem(b, n)
		})
	}
}

// BenchmarkErrorPolicyOverhead runs a Map whose function never fails with
// and without the error options: the policy runs only on the error path,
// so the happy path should cost the same (target: ≤ 1 ns/item more).
// Timeout is the exception: it makes a context per call, and the run
// shows what that costs.
func BenchmarkErrorPolicyOverhead(b *testing.B) {
	const n = 1 << 20
	xs := ints(n)
	inc := func(_ context.Context, v int) (int, error) { return v + 1, nil }
	for _, policy := range []string{"none", "skip+retry", "deadletter+retry", "timeout"} {
		b.Run("policy="+policy, func(b *testing.B) {
			for b.Loop() {
				p := sluice.New(context.Background())
				var opts []sluice.StageOption
				var dead sluice.Stream[sluice.Failed[int]]
				switch policy {
				case "skip+retry":
					opts = append(opts, sluice.SkipErrors(), sluice.Retry(3, time.Millisecond, time.Second))
				case "deadletter+retry":
					opts = append(opts, sluice.DeadLetter(&dead), sluice.Retry(3, time.Millisecond, time.Second))
				case "timeout": // not a target: what a context with a deadline per call costs
					opts = append(opts, sluice.Timeout(time.Minute))
				}
				m := sluice.Map(p, "inc", sluice.FromSlice(p, "src", xs), 1, inc, opts...)
				if policy == "deadletter+retry" {
					sluice.ForEach(p, "dead", dead, 1, func(context.Context, sluice.Failed[int]) error { return nil })
				}
				sum := sluice.Reduce(p, "sum", m, 0, func(a, v int) int { return a + v })
				if err := p.Wait(); err != nil || sum.Value() != sumTo(n)+n {
					b.Fatalf("got sum %d, err %v; want %d", sum.Value(), err, sumTo(n)+n)
				}
			}
			perItem(b, n)
		})
	}
}

// BenchmarkGather feeds 1M ints to a one-goroutine ForEachChunk sink whose
// call costs a fixed wait (a bulk write's round trip) or nothing, with
// and without Gather: each call of a gathering sink takes every chunk
// waiting, so a slow sink makes fewer calls; a fast one pays the copy of
// the items it gathers. Each run checks the sum of what the sink saw.
func BenchmarkGather(b *testing.B) {
	const n = 1 << 20
	xs := ints(n)
	for _, wait := range []time.Duration{0, 100 * time.Microsecond} {
		for _, gather := range []int{0, 1 << 16} {
			b.Run(fmt.Sprintf("call=%v/gather=%d", wait, gather), func(b *testing.B) {
				var opts []sluice.StageOption
				if gather > 0 {
					opts = append(opts, sluice.Gather(gather))
				}
				calls := 0
				for b.Loop() {
					p := sluice.New(context.Background())
					sum := 0
					sluice.ForEachChunk(p, "sink", sluice.FromSlice(p, "src", xs), 1, func(_ context.Context, items []int) error {
						calls++
						for _, v := range items {
							sum += v
						}
						if wait > 0 {
							time.Sleep(wait)
						}
						return nil
					}, opts...)
					if err := p.Wait(); err != nil || sum != sumTo(n) {
						b.Fatalf("got sum %d, err %v; want %d", sum, err, sumTo(n))
					}
				}
				perItem(b, n)
				b.ReportMetric(float64(calls)/float64(b.N), "calls/run")
			})
		}
	}
}

// BenchmarkHandToCaller hands 1M ints from a FromSlice to ordinary code:
// a loop over ToSeq, a receive loop over ToChan, and, as baselines in the
// same run, a one-worker ForEach (the item reaches a function inside the
// pipeline) and a goroutine sending on a channel buffered 1024. Each sums
// what it got and checks the sum.
func BenchmarkHandToCaller(b *testing.B) {
	const n = 1 << 20
	xs := ints(n)
	check := func(b *testing.B, sum int, err error) {
		if err != nil || sum != sumTo(n) {
			b.Fatalf("got sum %d, err %v; want %d", sum, err, sumTo(n))
		}
	}
	b.Run("impl=chan1024", func(b *testing.B) {
		for b.Loop() {
			ch := make(chan int, 1024)
			go func() {
				for _, v := range xs {
					ch <- v
				}
				close(ch)
			}()
			sum := 0
			for v := range ch {
				sum += v
			}
			check(b, sum, nil)
		}
		perItem(b, n)
	})
	b.Run("impl=ForEach", func(b *testing.B) {
		for b.Loop() {
			p := sluice.New(context.Background())
			sum := 0
			sluice.ForEach(p, "sum", sluice.FromSlice(p, "src", xs), 1, func(_ context.Context, v int) error { sum += v; return nil })
			check(b, sum, p.Wait())
		}
		perItem(b, n)
	})
	b.Run("impl=ToSeq", func(b *testing.B) {
		for b.Loop() {
			p := sluice.New(context.Background())
			sum := 0
			for v := range sluice.ToSeq(p, "out", sluice.FromSlice(p, "src", xs)) {
				sum += v
			}
			check(b, sum, p.Wait())
		}
		perItem(b, n)
	})
	b.Run("impl=ToChan", func(b *testing.B) {
		for b.Loop() {
			p := sluice.New(context.Background())
			sum := 0
			for v := range sluice.ToChan(p, "out", sluice.FromSlice(p, "src", xs)) {
				sum += v
			}
			check(b, sum, p.Wait())
		}
		perItem(b, n)
	})
}
