package ring

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A hammer runs producers and consumers flat out against one queue, mixing
// single and batch operations, with a small ring so that both sides keep
// finding it full or empty and park. Item v of producer p is p*perProducer+v.
type hammer struct {
	producers, consumers int
	perProducer          int // items each producer pushes; with closeAfter, an upper bound
	capacity             int
	// closeAfter, if positive, makes the test close the queue once the
	// consumers have received that many items, while producers still push.
	closeAfter int
}

func (h hammer) String() string {
	s := fmt.Sprintf("%dP%dC/cap=%d", h.producers, h.consumers, h.capacity)
	if h.closeAfter > 0 {
		s += "/close-racing-pushes"
	}
	return s
}

// run checks the invariants: every item pushed successfully is popped
// exactly once, nothing else is popped, and each consumer sees each
// producer's items in the order they were pushed.
func (h hammer) run(t *testing.T, q queue[int]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	pushed := make([]int, h.producers) // per producer: how many pushes succeeded
	var producers sync.WaitGroup
	for p := range h.producers {
		producers.Go(func() {
			r := rand.New(rand.NewPCG(uint64(p), 1))
			base, v := p*h.perProducer, 0
			batch := make([]int, 0, 17)
			for v < h.perProducer {
				if r.IntN(2) == 0 {
					if err := q.Push(ctx, base+v); err != nil {
						h.pushEnded(t, err)
						break
					}
					v++
					continue
				}
				batch = batch[:0]
				for k := 1 + r.IntN(17); k > 0 && v+len(batch) < h.perProducer; k-- {
					batch = append(batch, base+v+len(batch))
				}
				n, err := q.PushMany(ctx, batch)
				v += n
				if err != nil {
					h.pushEnded(t, err)
					break
				}
			}
			pushed[p] = v
		})
	}

	var received atomic.Int64
	got := make([][]int, h.consumers) // per consumer, in the order popped
	var consumers sync.WaitGroup
	for c := range h.consumers {
		consumers.Go(func() {
			r := rand.New(rand.NewPCG(uint64(c), 2))
			dst := make([]int, 33)
			for {
				var n int
				var err error
				if r.IntN(2) == 0 {
					dst[0], err = q.Pop(ctx)
					if err == nil {
						n = 1
					}
				} else {
					n, err = q.PopMany(ctx, dst[:1+r.IntN(len(dst))])
				}
				got[c] = append(got[c], dst[:n]...)
				if h.closeAfter > 0 && received.Add(int64(n)) >= int64(h.closeAfter) {
					q.Close()
				}
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("consumer %d: %v", c, err)
					}
					return
				}
			}
		})
	}

	producers.Wait()
	q.Close()
	consumers.Wait()
	if t.Failed() {
		return
	}
	h.verify(t, pushed, got)
}

func (h hammer) pushEnded(t *testing.T, err error) {
	t.Helper()
	if h.closeAfter == 0 || !errors.Is(err, ErrClosed) {
		t.Errorf("push: %v", err)
	}
}

func (h hammer) verify(t *testing.T, pushed []int, got [][]int) {
	t.Helper()
	seen := make([][]bool, h.producers)
	for p := range seen {
		seen[p] = make([]bool, h.perProducer)
	}
	total := 0
	for c, items := range got {
		last := make([]int, h.producers)
		for p := range last {
			last[p] = -1
		}
		for _, x := range items {
			p, v := x/h.perProducer, x%h.perProducer
			if x < 0 || p >= h.producers || v >= pushed[p] {
				t.Fatalf("consumer %d popped %d (producer %d, item %d), which was never pushed successfully", c, x, p, v)
			}
			if seen[p][v] {
				t.Fatalf("consumer %d popped item %d of producer %d twice", c, v, p)
			}
			if v <= last[p] {
				t.Fatalf("consumer %d popped item %d of producer %d after item %d: per-producer FIFO broken", c, v, p, last[p])
			}
			seen[p][v], last[p] = true, v
			total++
		}
	}
	want := 0
	for _, n := range pushed {
		want += n
	}
	if total != want {
		t.Fatalf("popped %d items, want %d (every successful push exactly once)", total, want)
	}
	if h.closeAfter > 0 && want >= h.producers*h.perProducer {
		t.Logf("close raced no push: all %d items went through before Close", want)
	}
}

func hammerSize(n int) int {
	if raceEnabled {
		return n / 10
	}
	return n
}

func TestSPSCHammerDeliversEveryItemOnceInOrder(t *testing.T) {
	for _, h := range []hammer{
		{producers: 1, consumers: 1, perProducer: hammerSize(200_000), capacity: 8},
		{producers: 1, consumers: 1, perProducer: hammerSize(200_000), capacity: 1024},
		{producers: 1, consumers: 1, perProducer: hammerSize(200_000), capacity: 64, closeAfter: hammerSize(50_000)},
	} {
		t.Run(h.String(), func(t *testing.T) { h.run(t, NewSPSC[int](h.capacity)) })
	}
}

func TestMPSCHammerDeliversEveryItemOncePerProducerFIFO(t *testing.T) {
	for _, h := range []hammer{
		{producers: 4, consumers: 1, perProducer: hammerSize(50_000), capacity: 8},
		{producers: 4, consumers: 1, perProducer: hammerSize(50_000), capacity: 1024},
		{producers: 8, consumers: 1, perProducer: hammerSize(50_000), capacity: 64, closeAfter: hammerSize(100_000)},
	} {
		t.Run(h.String(), func(t *testing.T) { h.run(t, NewMPSC[int](h.capacity)) })
	}
}

func TestMPMCHammerDeliversEveryItemOncePerProducerFIFO(t *testing.T) {
	for _, h := range []hammer{
		{producers: 4, consumers: 4, perProducer: hammerSize(50_000), capacity: 8},
		{producers: 4, consumers: 4, perProducer: hammerSize(50_000), capacity: 1024},
		{producers: 1, consumers: 4, perProducer: hammerSize(200_000), capacity: 16},
		{producers: 4, consumers: 1, perProducer: hammerSize(50_000), capacity: 16},
		{producers: 4, consumers: 4, perProducer: hammerSize(50_000), capacity: 64, closeAfter: hammerSize(100_000)},
	} {
		t.Run(h.String(), func(t *testing.T) { h.run(t, NewMPMC[int](h.capacity)) })
	}
}
