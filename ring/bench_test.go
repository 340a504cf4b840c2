package ring_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/seeds"
	"github.com/sluicehq/sluice/ring"
)

// Every benchmark moves benchItems items per b.Loop iteration from producer
// goroutines to consumer goroutines, checks that the consumers' sum is
// 0+1+…+benchItems-1 (so nothing was lost or duplicated), and reports
// ns/item. Every queue and channel holds benchCap items, and each group has
// a buffered channel of that capacity as its baseline.
const (
	benchItems = 1 << 16
	benchCap   = 1024
)

const wantSum = int64(benchItems) * (benchItems - 1) / 2

// measure runs move once per iteration and reports ns per item moved.
func measure(b *testing.B, move func() int64) {
	b.Helper()
	iters := 0
	for b.Loop() {
		if got := move(); got != wantSum {
			b.Fatalf("sum of items received: got %d, want %d", got, wantSum)
		}
		iters++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(iters*benchItems), "ns/item")
}

// produce starts one goroutine per producer; producer p pushes the values
// v ≡ p (mod producers) in increasing order, using push. The returned
// WaitGroup ends when all of them have returned.
func produce(producers int, push func(p int, lo, step int)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() { push(p, p, producers) })
	}
	return &wg
}

func BenchmarkSPSC(b *testing.B) {
	ctx := context.Background()
	for _, size := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("batch=%d/chan", size), func(b *testing.B) {
			measure(b, func() int64 { return viaChan(1, 1) })
		})
		if size == 1 {
			// The seed's ring, with its spin → yield → sleep wait. Its
			// sleep is not given; a short one favours it (see seeds).
			for _, sleep := range []time.Duration{seeds.RingSleep, 100 * time.Microsecond} {
				b.Run(fmt.Sprintf("batch=1/seed-sleep=%dus", sleep.Microseconds()), func(b *testing.B) {
					r := seeds.NewRingBuffer[int](benchCap)
					r.Sleep = sleep
					measure(b, func() int64 {
						wg := produce(1, func(_, lo, step int) {
							for v := lo; v < benchItems; v += step {
								r.Write(v)
							}
						})
						var sum int64
						for range benchItems {
							sum += int64(r.Read())
						}
						wg.Wait()
						return sum
					})
				})
			}
		} else {
			b.Run(fmt.Sprintf("batch=%d/chan-of-slices", size), func(b *testing.B) {
				measure(b, func() int64 { return viaChanOfSlices(size) })
			})
		}
		b.Run(fmt.Sprintf("batch=%d/ring", size), func(b *testing.B) {
			q := ring.NewSPSC[int](benchCap)
			measure(b, func() int64 { return viaSPSC(ctx, b, q, size) })
		})
	}
}

func BenchmarkMPSC(b *testing.B) {
	ctx := context.Background()
	for _, producers := range []int{1, 4} {
		for _, size := range []int{1, 64} {
			name := fmt.Sprintf("producers=%d/batch=%d", producers, size)
			b.Run(name+"/chan", func(b *testing.B) {
				measure(b, func() int64 { return viaChan(producers, 1) })
			})
			b.Run(name+"/ring", func(b *testing.B) {
				q := ring.NewMPSC[int](benchCap)
				measure(b, func() int64 { return viaMPSC(ctx, b, q, producers, size) })
			})
		}
	}
}

func BenchmarkMPMC(b *testing.B) {
	ctx := context.Background()
	for _, pc := range []int{1, 2, 4} {
		for _, size := range []int{1, 64} {
			name := fmt.Sprintf("producers=%d/consumers=%d/batch=%d", pc, pc, size)
			b.Run(name+"/chan", func(b *testing.B) {
				measure(b, func() int64 { return viaChan(pc, pc) })
			})
			b.Run(name+"/ring", func(b *testing.B) {
				measure(b, func() int64 {
					return viaMPMC(ctx, b, ring.NewMPMC[int](benchCap), pc, pc, size)
				})
			})
		}
	}
}

// viaChan moves the items one at a time through a buffered channel.
func viaChan(producers, consumers int) int64 {
	ch := make(chan int, benchCap)
	wg := produce(producers, func(_, lo, step int) {
		for v := lo; v < benchItems; v += step {
			ch <- v
		}
	})
	go func() { wg.Wait(); close(ch) }()
	sums := make([]int64, consumers)
	var cg sync.WaitGroup
	for c := range consumers {
		cg.Go(func() {
			var sum int64
			for v := range ch {
				sum += int64(v)
			}
			sums[c] = sum
		})
	}
	cg.Wait()
	return total(sums)
}

// viaChanOfSlices moves the items in chunks of size through a channel of
// slices, recycling the chunks through a second channel: the way a
// channel-based pipeline batches.
func viaChanOfSlices(size int) int64 {
	chunks := benchCap / size
	full, free := make(chan []int, chunks), make(chan []int, chunks+1)
	for range chunks + 1 {
		free <- make([]int, 0, size)
	}
	go func() {
		defer close(full)
		for v := 0; v < benchItems; {
			c := (<-free)[:0]
			for ; len(c) < size && v < benchItems; v++ {
				c = append(c, v)
			}
			full <- c
		}
	}()
	var sum int64
	for c := range full {
		for _, v := range c {
			sum += int64(v)
		}
		free <- c
	}
	return sum
}

func total(sums []int64) int64 {
	var t int64
	for _, s := range sums {
		t += s
	}
	return t
}
