package chans

import (
	"context"
	"testing"
)

// FuzzQueue applies a random sequence of push, pushAll, pop and popInto to a queue
// and to a plain slice and checks they agree, and that the ring stays a
// power of two no smaller than min and at most 4× the length (+min).
func FuzzQueue(f *testing.F) {
	f.Add(uint8(1), []byte{0, 0, 0, 1, 2, 0, 1, 1})
	f.Add(uint8(4), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 1})
	f.Add(uint8(3), []byte{0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 1, 1})
	f.Fuzz(func(t *testing.T, capacity uint8, ops []byte) {
		q := newQueue[int](int(capacity%16) + 1)
		var model []int
		next := 0
		for _, op := range ops {
			switch op % 4 {
			case 3:
				vs := make([]int, int(op/4)%70)
				for i := range vs {
					vs[i] = next
					next++
				}
				q.pushAll(vs)
				model = append(model, vs...)
			case 0:
				for range int(op/4)%8 + 1 {
					q.push(next)
					model = append(model, next)
					next++
				}
			case 1:
				if len(model) == 0 {
					continue
				}
				if got := q.pop(); got != model[0] {
					t.Fatalf("pop() = %d, want %d", got, model[0])
				}
				model = model[1:]
			case 2:
				dst := make([]int, int(op/4)%40)
				n := q.popInto(dst)
				want := min(len(dst), len(model))
				if n != want {
					t.Fatalf("popInto(len %d) = %d, want %d", len(dst), n, want)
				}
				for i := range n {
					if dst[i] != model[i] {
						t.Fatalf("popInto dst[%d] = %d, want %d", i, dst[i], model[i])
					}
				}
				model = model[n:]
			}
			if q.len() != len(model) {
				t.Fatalf("len() = %d, want %d", q.len(), len(model))
			}
			size := len(q.buf)
			if size&(size-1) != 0 || size < q.min || size > 4*q.len()+q.min {
				t.Fatalf("ring size %d with len %d, min %d: want a power of two in [min, 4·len+min]", size, q.len(), q.min)
			}
		}
	})
}

func TestElasticMemoryReturnsAfterABurst(t *testing.T) {
	const initial = 100
	e := NewElastic[int](WithCapacity(initial))
	for i := range 1 << 20 {
		e.Push(i)
	}
	dst := make([]int, 1000)
	for e.Len() > (1<<20)/4-1000 {
		e.PopMany(context.Background(), dst)
	}
	if got, max := len(e.q.buf), 4*e.Len(); got > max {
		t.Fatalf("at a quarter full the ring has %d slots for %d values, want at most %d", got, e.Len(), max)
	}
	for e.Len() > 0 {
		e.PopMany(context.Background(), dst)
	}
	if got := len(e.q.buf); got > 2*initial {
		t.Fatalf("drained ring has %d slots, want at most %d (2 × initial capacity)", got, 2*initial)
	}
}
