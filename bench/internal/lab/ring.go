package lab

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/internal/seeds"
	"github.com/sluicehq/sluice/ring"
)

// Seed 004's "when to abandon channels": lock-free rings against buffered
// channels of the same capacity, one item at a time and in batches. A
// round moves the values 0 … n-1: producer p sends p, p+P, p+2P, … in
// order; consumers check that each producer's values reach them in
// increasing order, and the round checks that the values' sum and count
// are those of 0 … n-1, so nothing was lost or duplicated.

const (
	ringCap   = 1024
	ringBatch = 256
)

// queue is what ring.SPSC, ring.MPSC and ring.MPMC have in common.
type queue interface {
	Push(ctx context.Context, v int) error
	Pop(ctx context.Context) (int, error)
	PushMany(ctx context.Context, xs []int) (int, error)
	PopMany(ctx context.Context, dst []int) (int, error)
	Close()
}

// tally is one consumer's view: its sum, its count, and the last value
// seen from each producer.
type tally struct {
	sum, n int
	last   []int
	err    error
}

func newTally(producers int) *tally {
	t := &tally{last: make([]int, producers)}
	for i := range t.last {
		t.last[i] = -1
	}
	return t
}

func (t *tally) see(v int) {
	p := v % len(t.last)
	if v <= t.last[p] && t.err == nil {
		t.err = fmt.Errorf("value %d from producer %d after %d (out of order or duplicated)", v, p, t.last[p])
	}
	t.last[p] = v
	t.sum += v
	t.n++
}

func checkTallies(n int, ts []*tally) error {
	sum, cnt := 0, 0
	for _, t := range ts {
		if t.err != nil {
			return t.err
		}
		sum, cnt = sum+t.sum, cnt+t.n
	}
	if cnt != n || sum != n*(n-1)/2 {
		return fmt.Errorf("received %d values summing to %d, want %d summing to %d", cnt, sum, n, n*(n-1)/2)
	}
	return nil
}

// moveRound starts the producers and consumers and waits for both.
func moveRound(n, producers, consumers int, push func(p int), pop func(c int, t *tally), closeAll func()) error {
	var pw, cw sync.WaitGroup
	for p := range producers {
		pw.Go(func() { push(p) })
	}
	ts := make([]*tally, consumers)
	for c := range consumers {
		ts[c] = newTally(producers)
		cw.Go(func() { pop(c, ts[c]) })
	}
	pw.Wait()
	closeAll()
	cw.Wait()
	return checkTallies(n, ts)
}

func viaChannel(n, producers, consumers int) error {
	ch := make(chan int, ringCap)
	return moveRound(n, producers, consumers,
		func(p int) {
			for v := p; v < n; v += producers {
				ch <- v
			}
		},
		func(_ int, t *tally) {
			for v := range ch {
				t.see(v)
			}
		},
		func() { close(ch) })
}

func viaChannelOfSlices(n int) error {
	ch := make(chan []int, ringCap/ringBatch)
	return moveRound(n, 1, 1,
		func(int) {
			for lo := 0; lo < n; lo += ringBatch {
				b := make([]int, 0, ringBatch)
				for v := lo; v < min(lo+ringBatch, n); v++ {
					b = append(b, v)
				}
				ch <- b
			}
		},
		func(_ int, t *tally) {
			for b := range ch {
				for _, v := range b {
					t.see(v)
				}
			}
		},
		func() { close(ch) })
}

func viaSeedRing(n int, r *seeds.RingBuffer[int]) error {
	// The seed's ring has no close: the consumer reads exactly n values.
	return moveRound(n, 1, 1,
		func(int) {
			for v := range n {
				r.Write(v)
			}
		},
		func(_ int, t *tally) {
			for range n {
				t.see(r.Read())
			}
		},
		func() {})
}

// viaQueue moves the values through q one at a time (batch 1) or in runs
// of up to batch.
func viaQueue(n, producers, consumers, batch int, q queue) error {
	ctx := context.Background()
	var perr error
	var mu sync.Mutex
	fail := func(err error) {
		mu.Lock()
		perr = errors.Join(perr, err)
		mu.Unlock()
	}
	err := moveRound(n, producers, consumers,
		func(p int) {
			if batch == 1 {
				for v := p; v < n; v += producers {
					if err := q.Push(ctx, v); err != nil {
						fail(err)
						return
					}
				}
				return
			}
			buf := make([]int, 0, batch)
			for v := p; v < n; v += producers {
				if buf = append(buf, v); len(buf) == batch || v+producers >= n {
					if _, err := q.PushMany(ctx, buf); err != nil {
						fail(err)
						return
					}
					buf = buf[:0]
				}
			}
		},
		func(_ int, t *tally) {
			if batch == 1 {
				for {
					v, err := q.Pop(ctx)
					if err != nil {
						if !errors.Is(err, ring.ErrClosed) {
							fail(err)
						}
						return
					}
					t.see(v)
				}
			}
			buf := make([]int, batch)
			for {
				k, err := q.PopMany(ctx, buf)
				for _, v := range buf[:k] {
					t.see(v)
				}
				if err != nil {
					if !errors.Is(err, ring.ErrClosed) {
						fail(err)
					}
					return
				}
			}
		},
		q.Close)
	return errors.Join(perr, err)
}

func ringExperiment() *Experiment {
	return &Experiment{
		Name: "ring", Seed: "004", Unit: "item",
		Title: fmt.Sprintf("lock-free rings vs buffered channels, capacity %d, batches of %d", ringCap, ringBatch),
		Cases: func(c *Config) []Case {
			var cases []Case
			add := func(group, variant string, baseline bool, n int, round func() error) {
				cases = append(cases, Case{
					Group: group, Variant: variant, Baseline: baseline, Items: n,
					Setup: func() (*Instance, error) {
						return &Instance{Round: func(Metrics) error { return round() }}, nil
					},
				})
			}
			for _, n := range c.sizes(pick(c.Mode, []int{100_000}, []int{50_000}, []int{2000})) {
				g := fmt.Sprintf("SPSC 1→1, n=%s", count(n))
				add(g, "chan buffered 1024", true, n, func() error { return viaChannel(n, 1, 1) })
				add(g, "chan of 256-item slices", false, n, func() error { return viaChannelOfSlices(n) })
				add(g, "seed RingBuffer (spin → yield → sleep)", false, n, func() error {
					return viaSeedRing(n, seeds.NewRingBuffer[int](ringCap))
				})
				add(g, "sluice ring.SPSC Push/Pop", false, n, func() error { return viaQueue(n, 1, 1, 1, ring.NewSPSC[int](ringCap)) })
				add(g, "sluice ring.SPSC PushMany/PopMany", false, n, func() error {
					return viaQueue(n, 1, 1, ringBatch, ring.NewSPSC[int](ringCap))
				})

				g = fmt.Sprintf("MPSC 4→1, n=%s", count(n))
				add(g, "chan buffered 1024", true, n, func() error { return viaChannel(n, 4, 1) })
				add(g, "sluice ring.MPSC Push/Pop", false, n, func() error { return viaQueue(n, 4, 1, 1, ring.NewMPSC[int](ringCap)) })
				add(g, "sluice ring.MPSC PushMany/PopMany", false, n, func() error {
					return viaQueue(n, 4, 1, ringBatch, ring.NewMPSC[int](ringCap))
				})

				g = fmt.Sprintf("MPMC 2→2, n=%s", count(n))
				add(g, "chan buffered 1024", true, n, func() error { return viaChannel(n, 2, 2) })
				add(g, "sluice ring.MPMC Push/Pop", false, n, func() error { return viaQueue(n, 2, 2, 1, ring.NewMPMC[int](ringCap)) })
				add(g, "sluice ring.MPMC PushMany/PopMany", false, n, func() error {
					return viaQueue(n, 2, 2, ringBatch, ring.NewMPMC[int](ringCap))
				})
			}
			return cases
		},
	}
}
