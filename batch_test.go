package sluice_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

func batchSizes(bs [][]int) []int {
	var sizes []int
	for _, b := range bs {
		sizes = append(sizes, len(b))
	}
	return sizes
}

func TestBatchFlushesWhenFullAndAtEnd(t *testing.T) {
	for _, tc := range []struct{ n, size int }{{1000, 100}, {250, 100}, {1, 500}, {0, 10}} {
		t.Run(fmt.Sprintf("n=%d/size=%d", tc.n, tc.size), func(t *testing.T) {
			p := sluice.New(context.Background())
			b := sluice.Batch(p, "batch", sluice.FromSlice(p, "src", ints(tc.n)), tc.size, time.Hour)
			got := sluice.Collect(p, "c", b)
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			var want []int
			for left := tc.n; left > 0; left -= tc.size {
				want = append(want, min(left, tc.size))
			}
			if fmt.Sprint(batchSizes(got.Value())) != fmt.Sprint(want) {
				t.Fatalf("got batch sizes %v, want %v", batchSizes(got.Value()), want)
			}
			var flat []int
			for _, b := range got.Value() {
				flat = append(flat, b...)
			}
			if fmt.Sprint(flat) != fmt.Sprint(ints(tc.n)) {
				t.Fatal("batches lost or reordered items")
			}
		})
	}
}

func TestBatchFlushesAfterMaxWaitSinceFirstItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const maxWait = 50 * time.Millisecond
		in := make(chan int)
		p := sluice.New(context.Background())
		b := sluice.Batch(p, "batch", sluice.FromChan(p, "src", in), 100, maxWait)
		out := sluice.ToChan(p, "out", b)

		start := time.Now()
		in <- 1
		time.Sleep(10 * time.Millisecond)
		in <- 2
		got := <-out
		if waited := time.Since(start); waited != maxWait {
			t.Fatalf("got the batch after %v, want exactly maxWait (%v) after its first item", waited, maxWait)
		}
		if fmt.Sprint(got) != "[1 2]" {
			t.Fatalf("got %v, want [1 2]", got)
		}

		// Idle time produces no empty batches.
		time.Sleep(10 * maxWait)
		select {
		case b := <-out:
			t.Fatalf("got batch %v while idle, want none", b)
		default:
		}
		in <- 3
		close(in)
		if got := <-out; fmt.Sprint(got) != "[3]" {
			t.Fatalf("got %v, want the last partial batch [3] at end of input", got)
		}
		if _, ok := <-out; ok {
			t.Fatal("output still open after the input closed")
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestBatchWithoutMaxWaitHoldsUntilFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := make(chan int)
		p := sluice.New(context.Background())
		out := sluice.ToChan(p, "out", sluice.Batch(p, "batch", sluice.FromChan(p, "src", in), 2, 0))
		in <- 1
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case b := <-out:
			t.Fatalf("got %v before the batch was full, want nothing", b)
		default:
		}
		in <- 2
		if got := <-out; fmt.Sprint(got) != "[1 2]" {
			t.Fatalf("got %v, want [1 2]", got)
		}
		close(in)
		for range out {
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestUnbatchRestoresTheItems(t *testing.T) {
	p := sluice.New(context.Background())
	b := sluice.Batch(p, "b", sluice.FromSlice(p, "src", ints(1234)), 100, 0)
	got := sluice.Collect(p, "c", sluice.Unbatch(p, "u", b))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Value()) != fmt.Sprint(ints(1234)) {
		t.Fatal("Unbatch lost or reordered items")
	}
}

func TestTrickledItemIsNotHeldBackByChunking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := make(chan int)
		p := sluice.New(context.Background())
		m := sluice.Map(p, "double", sluice.FromChan(p, "src", in), 3, double)
		f := sluice.Filter(p, "keep", m, 2, func(context.Context, int) (bool, error) { return true, nil })
		out := sluice.ToChan(p, "out", f)
		for i := range 5 {
			in <- i
			// A lone item reaches the end without waiting for a chunk to
			// fill: no fake time passes before it arrives.
			start := time.Now()
			if got := <-out; got != 2*i || time.Since(start) != 0 {
				t.Fatalf("got %d after %v, want %d at once", got, time.Since(start), 2*i)
			}
		}
		close(in)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	})
}

// Chunk on a Batch sets how many batches its output moves at once, as on
// any stage: the default buffer of large batches must not shrink it.
func TestBatchKeepsTheChunkItIsGiven(t *testing.T) {
	for _, tc := range []struct{ size, chunk, buffer int }{{1000, 10, 0}, {1, 10, 0}, {1000, 10, 30}} {
		t.Run(fmt.Sprintf("size=%d/chunk=%d/buffer=%d", tc.size, tc.chunk, tc.buffer), func(t *testing.T) {
			p := sluice.New(t.Context())
			opts := []sluice.StageOption{sluice.Chunk(tc.chunk)}
			if tc.buffer > 0 {
				opts = append(opts, sluice.Buffer(tc.buffer))
			}
			b := sluice.Batch(p, "batch", sluice.FromSlice(p, "src", ints(5000)), tc.size, 0, opts...)
			got := sluice.Collect(p, "c", b)
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if n := len(got.Value()); n != (5000+tc.size-1)/tc.size {
				t.Fatalf("got %d batches", n)
			}
			e := p.Stats().Edges[1]
			if e.ChunkSize != tc.chunk || e.Capacity < tc.buffer {
				t.Fatalf("batch output edge: chunk size %d, capacity %d; want Chunk(%d) and room for at least %d", e.ChunkSize, e.Capacity, tc.chunk, tc.buffer)
			}
		})
	}
}
