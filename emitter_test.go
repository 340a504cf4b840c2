package sluice_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

func TestAwaitShowsTheGeneratorWaitingForInput(t *testing.T) {
	in := make(chan int)
	p := sluice.New(context.Background())
	src := sluice.From(p, "gen", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for {
			var v int
			var ok bool
			if !out.Await(func() { v, ok = <-in }) {
				return ctx.Err()
			}
			if !ok {
				return nil
			}
			out.Send(v)
		}
	})
	res := sluice.ToChan(p, "out", src)
	in <- 7
	if v := <-res; v != 7 { // Await flushed it: no chunk had to fill
		t.Fatalf("got %d, want 7", v)
	}
	for p.Stats().Stages[0].Waiting != 1 {
		time.Sleep(time.Millisecond)
	}
	if st := p.Stats().Stages[0]; st.WaitingForRoom != 0 {
		t.Fatalf("got %d waiting for room, want the generator waiting for input", st.WaitingForRoom)
	}
	close(in)
	for range res {
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
}
