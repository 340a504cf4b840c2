package chans

import (
	"context"
	"testing"
)

// FuzzQueue applies a random sequence of push, pushAll, pop and popInto to a queue
// and to a plain slice and checks they agree, and that the queue's memory
// stays within its length plus two blocks.
func FuzzQueue(f *testing.F) {
	f.Add(uint8(1), []byte{0, 0, 0, 1, 2, 0, 1, 1})
	f.Add(uint8(4), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 1})
	f.Add(uint8(3), []byte{0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 1, 1})
	f.Fuzz(func(t *testing.T, capacity uint8, ops []byte) {
		q := newBlockQueue[int](int(capacity%16) + 1)
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
			if slots := q.slots(); slots > q.len()+2*q.size || slots%q.size != 0 {
				t.Fatalf("%d slots in blocks of %d with len %d: want whole blocks, at most len + 2 blocks", slots, q.size, q.len())
			}
		}
	})
}

// TestQueueKeepsNothingItHandedOut checks that a queue of pointers clears
// every slot it has read, in the blocks it keeps (the spare included).
func TestQueueKeepsNothingItHandedOut(t *testing.T) {
	q := newBlockQueue[*int](4)
	dst := make([]*int, 3)
	for round := range 50 {
		for range round % 11 {
			q.push(new(int))
		}
		if round%3 == 0 {
			q.pushAll([]*int{new(int), new(int)})
		}
		if round%2 == 0 && q.len() > 0 {
			q.pop()
		} else {
			q.popInto(dst)
		}
		live := 0
		for b := q.head; b != nil; b = b.next {
			for _, p := range b.v {
				if p != nil {
					live++
				}
			}
		}
		if q.spare != nil {
			for _, p := range q.spare.v {
				if p != nil {
					t.Fatalf("round %d: the spare block holds a value", round)
				}
			}
		}
		if live != q.len() {
			t.Fatalf("round %d: blocks hold %d values, the queue has %d", round, live, q.len())
		}
	}
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
	if got, max := e.q.slots(), e.Len()+2*initial; got > max {
		t.Fatalf("at a quarter full the queue has %d slots for %d values, want at most %d (len + 2 blocks)", got, e.Len(), max)
	}
	for e.Len() > 0 {
		e.PopMany(context.Background(), dst)
	}
	if got := e.q.slots(); got > 2*initial {
		t.Fatalf("drained queue has %d slots, want at most %d (2 × initial capacity)", got, 2*initial)
	}
}

// slots returns how many values the queue's blocks can hold, the spare
// included: its memory, in values.
func (q *queue[T]) slots() int {
	n := 0
	for b := q.head; b != nil; b = b.next {
		n += len(b.v)
	}
	if q.spare != nil {
		n += len(q.spare.v)
	}
	return n
}
