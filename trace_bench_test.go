package sluice_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice"
)

// BenchmarkTracing runs Map → ForEach over 64k ints, one worker each, with
// no Tracing, with a tracer that starts nothing (it returns the context it
// is given: what the pipeline's tracing costs, the tracer aside) and with
// one that starts a span as cheaply as a tracer can (a context value per
// span: the source's span begins each item's trace, which the Map's and
// the ForEach's continue). Per item: two calls and, with a tracer that
// starts something, three spans.
func BenchmarkTracing(b *testing.B) {
	const n = 1 << 16
	xs := ints(n)
	for _, c := range []struct {
		name string
		t    sluice.Tracer
	}{{"none", nil}, {"starts-nothing", nopTracer{}}, {"context-value", valueTracer{}}} {
		b.Run("tracer="+c.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuNs()
			for b.Loop() {
				var opts []sluice.Option
				if c.t != nil {
					opts = append(opts, sluice.Tracing(c.t))
				}
				p := sluice.New(context.Background(), opts...)
				m := sluice.Map(p, "inc", sluice.FromSlice(p, "src", xs), 1, func(_ context.Context, v int) (int, error) { return v + 1, nil })
				sum := 0
				sluice.ForEach(p, "sum", m, 1, func(_ context.Context, v int) error { sum += v; return nil })
				if err := p.Wait(); err != nil || sum != sumTo(n)+n {
					b.Fatalf("got sum %d, err %v; want %d", sum, err, sumTo(n)+n)
				}
			}
			perItemCPU(b, n, cpu0)
		})
	}
}

type nopTracer struct{}

func (nopTracer) Start(ctx context.Context, _ sluice.Call) (context.Context, func(error)) {
	return ctx, func(error) {}
}

type valueTracer struct{}

func (valueTracer) Start(ctx context.Context, c sluice.Call) (context.Context, func(error)) {
	if c.Parent != nil {
		ctx = context.WithValue(ctx, spanKey{}, c.Parent.Value(spanKey{}))
	}
	return context.WithValue(ctx, spanKey{}, c.Stage), endNop
}

func endNop(error) {}
