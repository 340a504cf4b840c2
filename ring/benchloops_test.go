package ring_test

import (
	"context"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/ring"
)

// The loops below move the benchmark's items through each kind of queue.
// They are written out per concrete type, not against an interface, so that
// every push and pop is a direct call, as in a caller's code: an interface
// call costs a few ns per operation, a sizeable part of a single-item
// transfer. size is the number of items per call; size 1 uses Push and Pop.

func viaSPSC(ctx context.Context, b *testing.B, q *ring.SPSC[int], size int) int64 {
	wg := produce(1, func(_, lo, step int) {
		if size == 1 {
			for v := lo; v < benchItems; v += step {
				if err := q.Push(ctx, v); err != nil {
					b.Error(err)
					return
				}
			}
			return
		}
		buf := make([]int, 0, size)
		for v := lo; v < benchItems; {
			buf, v = nextBatch(buf, v, step)
			if _, err := q.PushMany(ctx, buf); err != nil {
				b.Error(err)
				return
			}
		}
	})
	defer wg.Wait()
	var sum int64
	if size == 1 {
		for range benchItems {
			v, err := q.Pop(ctx)
			if err != nil {
				b.Fatal(err)
			}
			sum += int64(v)
		}
		return sum
	}
	dst := make([]int, size)
	for got := 0; got < benchItems; {
		n, err := q.PopMany(ctx, dst)
		if err != nil {
			b.Fatal(err)
		}
		sum += sumOf(dst[:n])
		got += n
	}
	return sum
}

func viaMPSC(ctx context.Context, b *testing.B, q *ring.MPSC[int], producers, size int) int64 {
	wg := produce(producers, func(_, lo, step int) {
		if size == 1 {
			for v := lo; v < benchItems; v += step {
				if err := q.Push(ctx, v); err != nil {
					b.Error(err)
					return
				}
			}
			return
		}
		buf := make([]int, 0, size)
		for v := lo; v < benchItems; {
			buf, v = nextBatch(buf, v, step)
			if _, err := q.PushMany(ctx, buf); err != nil {
				b.Error(err)
				return
			}
		}
	})
	defer wg.Wait()
	var sum int64
	if size == 1 {
		for range benchItems {
			v, err := q.Pop(ctx)
			if err != nil {
				b.Fatal(err)
			}
			sum += int64(v)
		}
		return sum
	}
	dst := make([]int, size)
	for got := 0; got < benchItems; {
		n, err := q.PopMany(ctx, dst)
		if err != nil {
			b.Fatal(err)
		}
		sum += sumOf(dst[:n])
		got += n
	}
	return sum
}

// viaMPMC runs several consumers, which stop when the producers are done
// and q is closed and drained; q is used once.
func viaMPMC(ctx context.Context, b *testing.B, q *ring.MPMC[int], producers, consumers, size int) int64 {
	wg := produce(producers, func(_, lo, step int) {
		if size == 1 {
			for v := lo; v < benchItems; v += step {
				if err := q.Push(ctx, v); err != nil {
					b.Error(err)
					return
				}
			}
			return
		}
		buf := make([]int, 0, size)
		for v := lo; v < benchItems; {
			buf, v = nextBatch(buf, v, step)
			if _, err := q.PushMany(ctx, buf); err != nil {
				b.Error(err)
				return
			}
		}
	})
	go func() { wg.Wait(); q.Close() }()
	sums := make([]int64, consumers)
	var cg sync.WaitGroup
	for c := range consumers {
		cg.Go(func() {
			var sum int64
			dst := make([]int, size)
			for {
				var err error
				if size == 1 {
					dst[0], err = q.Pop(ctx)
					if err == nil {
						sum += int64(dst[0])
					}
				} else {
					var n int
					n, err = q.PopMany(ctx, dst)
					sum += sumOf(dst[:n])
				}
				if err == ring.ErrClosed {
					break
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
			sums[c] = sum
		})
	}
	cg.Wait()
	return total(sums)
}

// nextBatch refills buf with up to cap(buf) values v, v+step, … below
// benchItems and returns it with the next value.
func nextBatch(buf []int, v, step int) ([]int, int) {
	buf = buf[:0]
	for ; len(buf) < cap(buf) && v < benchItems; v += step {
		buf = append(buf, v)
	}
	return buf, v
}

func sumOf(xs []int) int64 {
	var s int64
	for _, x := range xs {
		s += int64(x)
	}
	return s
}
