package chans_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/sluicehq/sluice/chans"
)

// BenchmarkElasticBounds measures, in one run, what bounds the Elastic
// targets on the machine at hand (docs/status.md quotes it):
//
//   - chanop-ns: one uncontended channel operation (a goroutine filling a
//     1024-slot channel, then emptying it). Channel ends with a goroutine
//     between them make four per value (the producer's send, the relay's
//     receive and send, the consumer's receive); floor4-ns is four of them,
//     what a value costs when the three goroutines run in turn on one CPU
//     with nothing overlapping. It is no floor on two CPUs, where the
//     operations can overlap (issue 22: on an AMD EPYC seed 001's loop with
//     4096-slot ends runs below what was taken for a floor). seq-target-ns
//     is the sequential target (the seed's time / 1.6).
//   - elasticchan-seq-1p-ns: ElasticChan's sequential shape with
//     GOMAXPROCS=1, where nothing crosses CPUs.
//   - forwarder-x-chan: the simplest relay (range over In, send on Out)
//     against a 1024-buffered channel, concurrent: what two more channel
//     operations per value cost when the goroutines share two CPUs.
//   - push-alone-ns: Push with no other goroutine touching the Elastic
//     (256 pushes, then one PopMany); popmany-ceiling-x is a 1024 channel's
//     concurrent time over it: the most Push + PopMany could reach against
//     the channel if the consumer cost the producer nothing.
//
// Every run checks its values, as elasticRun does.
func BenchmarkElasticBounds(b *testing.B) {
	const n = 1 << 16
	var chanop, oneP, seedSeq, fwd, chanCon, push []float64
	check := func(kind string, seq bool) float64 {
		ns, ok := elasticRun(kind, n, seq)
		if !ok {
			b.Fatalf("%s: values lost, duplicated or reordered", kind)
		}
		return ns
	}
	for b.Loop() {
		chanop = append(chanop, chanOpNs(b))
		prev := runtime.GOMAXPROCS(1)
		oneP = append(oneP, check("ElasticChan", true))
		runtime.GOMAXPROCS(prev)
		seedSeq = append(seedSeq, check("SeedElastic", true))
		fwd = append(fwd, check("Forwarder", false))
		chanCon = append(chanCon, check("Chan1024", false))
		push = append(push, pushAloneNs(b))
	}
	op := median(chanop)
	b.ReportMetric(op, "chanop-ns")
	b.ReportMetric(4*op, "floor4-ns")
	b.ReportMetric(median(seedSeq)/1.6, "seq-target-ns")
	b.ReportMetric(median(oneP), "elasticchan-seq-1p-ns")
	b.ReportMetric(median(fwd)/median(chanCon), "forwarder-x-chan")
	b.ReportMetric(median(push), "push-alone-ns")
	b.ReportMetric(median(chanCon)/median(push), "popmany-ceiling-x")
}

// chanOpNs returns the time of one channel operation on a channel only
// this goroutine uses.
func chanOpNs(b *testing.B) float64 {
	const rounds, size = 64, 1024
	c := make(chan int, size)
	start := time.Now()
	sum := 0
	for range rounds {
		for i := range size {
			c <- i
		}
		for range size {
			sum += <-c
		}
	}
	el := time.Since(start)
	if want := rounds * size * (size - 1) / 2; sum != want {
		b.Fatalf("channel gave back %d in all, want %d", sum, want)
	}
	return float64(el.Nanoseconds()) / (2 * rounds * size)
}

// pushAloneNs returns the time of one Push with nobody else touching the
// Elastic, 256 pushes then one PopMany at a time, checked.
func pushAloneNs(b *testing.B) float64 {
	const rounds, size = 256, 256
	e := chans.NewElastic[int]()
	defer e.Close()
	dst := make([]int, size)
	start := time.Now()
	for range rounds {
		for i := range size {
			e.Push(i)
		}
		if k, err := e.PopMany(context.Background(), dst); k != size || err != nil || dst[size-1] != size-1 {
			b.Fatalf("PopMany = %d, %v: want %d values 0…%d", k, err, size, size-1)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / (rounds * size)
}
