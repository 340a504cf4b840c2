package sluice_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// BenchmarkBareCall runs Map and ForEach with no option over 1M ints, one
// worker each: what a stage costs per item when its call chain is the bare
// call (the plain loop); and, for scale, an edge hop alone (a generator
// into a Reduce, as BenchmarkEdgeHop's impl=sluice).
func BenchmarkBareCall(b *testing.B) {
	const n = 1 << 20
	xs := ints(n)
	b.Run("stage=edge-hop", func(b *testing.B) { // BenchmarkEdgeHop's impl=sluice
		b.ReportAllocs()
		cpu0 := cpuNs()
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
		perItemCPU(b, n, cpu0)
	})
	b.Run("stage=Map", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := cpuNs()
		for b.Loop() {
			p := sluice.New(context.Background())
			m := sluice.Map(p, "inc", sluice.FromSlice(p, "src", xs), 1, func(_ context.Context, v int) (int, error) { return v + 1, nil })
			sum := sluice.Reduce(p, "sum", m, 0, func(a, v int) int { return a + v })
			if err := p.Wait(); err != nil || sum.Value() != sumTo(n)+n {
				b.Fatalf("got sum %d, err %v; want %d", sum.Value(), err, sumTo(n)+n)
			}
		}
		perItemCPU(b, n, cpu0)
	})
	b.Run("stage=ForEach", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := cpuNs()
		for b.Loop() {
			p := sluice.New(context.Background())
			sum := 0
			sluice.ForEach(p, "sum", sluice.FromSlice(p, "src", xs), 1, func(_ context.Context, v int) error { sum += v; return nil })
			if err := p.Wait(); err != nil || sum != sumTo(n) {
				b.Fatalf("got sum %d, err %v; want %d", sum, err, sumTo(n))
			}
		}
		perItemCPU(b, n, cpu0)
	})
}

// BenchmarkChainSteps runs a one-worker Map over 1M ints whose function
// never fails, with each per-call step alone and all three: the chain's
// own cost per call is the difference from steps=none. The Throttle's
// limiter never waits, so what is measured is the step, not a rate;
// Timeout's figure includes the context and timer it makes per call.
func BenchmarkChainSteps(b *testing.B) {
	const n = 1 << 20
	xs := ints(n)
	inc := func(_ context.Context, v int) (int, error) { return v + 1, nil }
	for _, c := range []struct {
		name string
		opts []sluice.StageOption
	}{
		{"none", nil},
		{"Retry", []sluice.StageOption{sluice.Retry(3, time.Millisecond, time.Second)}},
		{"Throttle", []sluice.StageOption{sluice.Throttle(noLimit{})}},
		{"Timeout", []sluice.StageOption{sluice.Timeout(time.Minute)}},
		{"Retry+Throttle", []sluice.StageOption{sluice.Retry(3, time.Millisecond, time.Second), sluice.Throttle(noLimit{})}},
		{"Retry+Timeout+Throttle", []sluice.StageOption{sluice.Retry(3, time.Millisecond, time.Second), sluice.Timeout(time.Minute), sluice.Throttle(noLimit{})}},
	} {
		b.Run("steps="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuNs()
			for b.Loop() {
				p := sluice.New(context.Background())
				m := sluice.Map(p, "inc", sluice.FromSlice(p, "src", xs), 1, inc, c.opts...)
				sum := sluice.Reduce(p, "sum", m, 0, func(a, v int) int { return a + v })
				if err := p.Wait(); err != nil || sum.Value() != sumTo(n)+n {
					b.Fatalf("got sum %d, err %v; want %d", sum.Value(), err, sumTo(n)+n)
				}
			}
			perItemCPU(b, n, cpu0)
		})
	}
}

// cpuNs is the CPU time the process has used, user and system, in ns: a
// figure that other processes on a loaded machine disturb less than the
// wall time.
func cpuNs() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// perItemCPU reports ns/item (wall) and cpu-ns/item: the process's CPU
// time since cpu0 over the items of every iteration.
func perItemCPU(b *testing.B, items int, cpu0 int64) {
	perItem(b, items)
	b.ReportMetric(float64(cpuNs()-cpu0)/float64(b.N)/float64(items), "cpu-ns/item")
}
