package chans_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/chans"
)

// refQueue is the reference model: a mutex and a slice, with the limit
// policies written the obvious way.
type refQueue struct {
	mu      sync.Mutex
	items   []int
	limit   int
	policy  chans.Policy
	dropped uint64
}

func (r *refQueue) push(v int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.limit > 0 && len(r.items) >= r.limit {
		r.dropped++
		if r.policy == chans.DropNewest {
			return false
		}
		r.items = r.items[1:]
	}
	r.items = append(r.items, v)
	return true
}

func (r *refQueue) popMany(n int) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n = min(n, len(r.items))
	got := slices.Clone(r.items[:n])
	r.items = r.items[n:]
	return got
}

// FuzzElastic drives an Elastic and the reference model with the same
// operations from one goroutine and checks every result: Push's and
// PushMany's verdicts,
// what Pop and PopMany return (or that they find nothing), Len, Dropped;
// then it switches to the channel ends, closes In and checks Out delivers
// exactly what the model still holds.
func FuzzElastic(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(1), []byte{0, 0, 1, 2, 0, 3, 4, 1, 1})
	f.Add(uint8(3), uint8(1), uint8(2), []byte{0, 0, 0, 0, 0, 0, 2, 0, 0, 1, 4})
	f.Add(uint8(2), uint8(2), uint8(1), []byte{0, 0, 0, 0, 1, 0, 0, 0, 0, 4, 3})
	f.Add(uint8(0), uint8(0), uint8(1), []byte{5, 5, 5, 0, 5, 1, 6, 6})
	f.Add(uint8(5), uint8(0), uint8(9), []byte{0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2})
	f.Add(uint8(4), uint8(1), uint8(3), []byte{7, 7, 2, 7, 1, 4, 3, 7, 21, 7})
	f.Fuzz(func(t *testing.T, limit, policy, capacity uint8, ops []byte) {
		ref := &refQueue{limit: int(limit % 8), policy: chans.Policy(policy%2) + chans.DropNewest}
		opts := []chans.ElasticOption{chans.WithCapacity(int(capacity%16) + 1)}
		if ref.limit > 0 {
			opts = append(opts, chans.WithLimit(ref.limit, ref.policy))
		}
		e := chans.NewElastic[int](opts...)
		defer e.Close()
		// viaIn: once a value has gone in through In, Len and the policies
		// depend on when the goroutine moves it, so the test stops checking
		// them and only pushes through In from then on.
		viaIn := false
		next := 0
		for _, op := range ops {
			switch op % 7 {
			case 0, 5:
				if op%7 == 5 && ref.limit == 0 {
					viaIn = true
				}
				switch {
				case viaIn:
					e.In() <- next
					ref.push(next)
				case op/7%2 == 1: // a batch of three
					want := 0
					for k := range 3 {
						if ref.push(next + k) {
							want++
						}
					}
					if got := e.PushMany(next, next+1, next+2); got != want {
						t.Fatalf("PushMany(%d, %d, %d) = %d, want %d", next, next+1, next+2, got, want)
					}
					next += 2
				default:
					if got, want := e.Push(next), ref.push(next); got != want {
						t.Fatalf("Push(%d) = %v, want %v", next, got, want)
					}
				}
				next++
			case 1, 2, 6:
				n := 1
				if op%7 == 2 {
					n = int(op/7)%5 + 1
				}
				want := ref.popMany(n)
				ctx := cancelled
				if len(want) > 0 {
					ctx = context.Background() // a value is there or on its way
				}
				dst := make([]int, n)
				k, err := e.PopMany(ctx, dst)
				if len(want) == 0 {
					if err == nil {
						t.Fatalf("PopMany on an empty queue = %v, want an error", dst[:k])
					}
					continue
				}
				if err != nil {
					t.Fatalf("PopMany: %v, want %v", err, want)
				}
				// Values sent on In may still be on their way: take the
				// rest one by one, blocking.
				for k < len(want) {
					v, err := e.Pop(context.Background())
					if err != nil {
						t.Fatalf("Pop: %v", err)
					}
					dst[k] = v
					k++
				}
				if !viaIn && k != len(want) {
					t.Fatalf("PopMany took %d, want %d", k, len(want))
				}
				if !slices.Equal(dst[:len(want)], want) {
					t.Fatalf("PopMany took %v, want %v", dst[:len(want)], want)
				}
			case 3:
				if !viaIn {
					if got, want := e.Len(), len(ref.items); got != want {
						t.Fatalf("Len() = %d, want %d", got, want)
					}
				}
			case 4:
				if got, want := e.Dropped(), ref.dropped; got != want {
					t.Fatalf("Dropped() = %d, want %d", got, want)
				}
			}
		}
		out := e.Out()
		close(e.In())
		var got []int
		for v := range out {
			got = append(got, v)
		}
		if want := ref.popMany(len(ref.items)); !slices.Equal(got, want) {
			t.Fatalf("Out after close(In) gave %v, want %v", got, want)
		}
		if _, err := e.Pop(context.Background()); !errors.Is(err, chans.ErrClosed) {
			t.Fatalf("Pop after Out closed: err = %v, want ErrClosed", err)
		}
	})
}
