package chans_test

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/chans"
)

// BenchmarkElasticPlacement explains the spread of the concurrent Push +
// PopMany figures in BenchmarkElasticVersus. Each iteration pushes 65536
// values one at a time on a new goroutine while the benchmark's goroutine
// pops them 256 at a time, and sorts the run by where the scheduler put
// the two: "apart" when more than half of the batches were popped while
// the producer was still pushing and on another OS thread than its last,
// "in-turn" otherwise (the consumer mostly ran before or after the
// producer, typically on the same thread). It reports how many runs fell
// in each class and the median ns/value of each.
func BenchmarkElasticPlacement(b *testing.B) {
	const n = 1 << 16
	var apart, inTurn []float64
	dst := make([]int, 256)
	for b.Loop() {
		e := chans.NewElastic[int]()
		var producing atomic.Bool
		var producerTid atomic.Int64
		producing.Store(true)
		fin := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(fin)
			defer producing.Store(false)
			for i := range n {
				e.Push(i)
				if i%1024 == 0 {
					producerTid.Store(int64(syscall.Gettid()))
				}
			}
		}()
		batches, parallel := 0, 0
		for next := 0; next < n; {
			k, err := e.PopMany(context.Background(), dst)
			if err != nil {
				b.Fatal(err)
			}
			for _, v := range dst[:k] {
				if v != next {
					b.Fatalf("popped %d, want %d", v, next)
				}
				next++
			}
			batches++
			if producing.Load() && producerTid.Load() != int64(syscall.Gettid()) {
				parallel++
			}
		}
		<-fin
		ns := float64(time.Since(start).Nanoseconds()) / n
		e.Close()
		if 2*parallel > batches {
			apart = append(apart, ns)
		} else {
			inTurn = append(inTurn, ns)
		}
	}
	b.ReportMetric(float64(len(apart)), "runs-apart")
	b.ReportMetric(float64(len(inTurn)), "runs-in-turn")
	if len(apart) > 0 {
		b.ReportMetric(median(apart), "apart-ns/value")
	}
	if len(inTurn) > 0 {
		b.ReportMetric(median(inTurn), "in-turn-ns/value")
	}
}
