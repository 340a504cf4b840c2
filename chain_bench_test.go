package sluice_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// BenchmarkBareCall runs Map and ForEach with no option over 1M ints, one
// worker each: what a stage costs per item when its call chain is the bare
// call (the plain loop).
func BenchmarkBareCall(b *testing.B) {
	const n = 1 << 20
	xs := ints(n)
	b.Run("stage=Map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := sluice.New(context.Background())
			m := sluice.Map(p, "inc", sluice.FromSlice(p, "src", xs), 1, func(_ context.Context, v int) (int, error) { return v + 1, nil })
			sum := sluice.Reduce(p, "sum", m, 0, func(a, v int) int { return a + v })
			if err := p.Wait(); err != nil || sum.Value() != sumTo(n)+n {
				b.Fatalf("got sum %d, err %v; want %d", sum.Value(), err, sumTo(n)+n)
			}
		}
		perItem(b, n)
	})
	b.Run("stage=ForEach", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := sluice.New(context.Background())
			sum := 0
			sluice.ForEach(p, "sum", sluice.FromSlice(p, "src", xs), 1, func(_ context.Context, v int) error { sum += v; return nil })
			if err := p.Wait(); err != nil || sum != sumTo(n) {
				b.Fatalf("got sum %d, err %v; want %d", sum, err, sumTo(n))
			}
		}
		perItem(b, n)
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
			for b.Loop() {
				p := sluice.New(context.Background())
				m := sluice.Map(p, "inc", sluice.FromSlice(p, "src", xs), 1, inc, c.opts...)
				sum := sluice.Reduce(p, "sum", m, 0, func(a, v int) int { return a + v })
				if err := p.Wait(); err != nil || sum.Value() != sumTo(n)+n {
					b.Fatalf("got sum %d, err %v; want %d", sum.Value(), err, sumTo(n)+n)
				}
			}
			perItem(b, n)
		})
	}
}
