package chans_test

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/chans"
)

func ExampleMerge() {
	a, b := make(chan int), make(chan int)
	go func() {
		defer close(a)
		for i := range 3 {
			a <- i
		}
	}()
	go func() {
		defer close(b)
		for i := range 3 {
			b <- 10 + i
		}
	}()
	var got []int
	for v := range chans.Merge(a, b) { // closes once a and b have closed
		got = append(got, v)
	}
	slices.Sort(got) // the two inputs interleave in no promised order
	fmt.Println(got)
	// Output: [0 1 2 10 11 12]
}

func ExampleMergeContext() {
	ctx, cancel := context.WithCancel(context.Background())
	ticks := make(chan int) // never closed
	go func() {
		for i := 0; ; i++ {
			select {
			case ticks <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	out := chans.MergeContext(ctx, ticks)
	fmt.Println(<-out, <-out, <-out)
	cancel()
	for range out { // closes soon after cancel, though ticks never does
	}
	fmt.Println("closed")
	// Output:
	// 0 1 2
	// closed
}

func ExampleElastic() {
	e := chans.NewElastic[string]()
	in := e.In()
	for _, s := range []string{"a", "b", "c"} {
		in <- s // never waits for a receiver
	}
	close(in)
	for s := range e.Out() { // closes after everything queued
		fmt.Print(s, " ")
	}
	fmt.Println()
	// Output: a b c
}

func ExampleNewElastic() {
	e := chans.NewElastic[int](chans.WithCapacity(1024), chans.WithLimit(2, chans.DropOldest))
	for i := range 5 {
		e.Push(i)
	}
	fmt.Println(e.Len(), e.Dropped())
	// Output: 2 3
}

func ExampleElastic_In() {
	e := chans.NewElastic[int]()
	defer e.Close()
	select {
	case e.In() <- 1: // usable in select; this case is ready at once
		fmt.Println("sent")
	default:
		fmt.Println("full")
	}
	// Output: sent
}

func ExampleElastic_Out() {
	e := chans.NewElastic[int]()
	defer e.Close()
	e.Push(42)
	select {
	case v := <-e.Out():
		fmt.Println(v)
	case <-context.Background().Done():
	}
	// Output: 42
}

func ExampleElastic_Push() {
	e := chans.NewElastic[int](chans.WithLimit(1, chans.DropNewest))
	fmt.Println(e.Push(1), e.Push(2))
	// Output: true false
}

func ExampleElastic_PushMany() {
	e := chans.NewElastic[int]()
	batch := []int{1, 2, 3}
	fmt.Println(e.PushMany(batch...), e.Len())
	// Output: 3 3
}

func ExampleElastic_Pop() {
	e := chans.NewElastic[string]()
	e.Push("first")
	e.Push("second")
	v, err := e.Pop(context.Background())
	fmt.Println(v, err)
	// Output: first <nil>
}

func ExampleElastic_PopMany() {
	e := chans.NewElastic[int]()
	for i := range 5 {
		e.Push(i)
	}
	close(e.In()) // the input ends: PopMany drains, then reports ErrClosed
	buf := make([]int, 3)
	for {
		n, err := e.PopMany(context.Background(), buf)
		if errors.Is(err, chans.ErrClosed) {
			break
		}
		fmt.Println(buf[:n])
	}
	// Output:
	// [0 1 2]
	// [3 4]
}

func ExampleElastic_Len() {
	e := chans.NewElastic[int]()
	e.Push(1)
	e.Push(2)
	fmt.Println(e.Len())
	// Output: 2
}

func ExampleElastic_Dropped() {
	e := chans.NewElastic[int](chans.WithLimit(2, chans.DropNewest))
	for i := range 10 {
		e.Push(i)
	}
	fmt.Println(e.Dropped())
	// Output: 8
}

func ExampleElastic_Close() {
	e := chans.NewElastic[int]()
	out := e.Out()
	e.Close() // stops the goroutine; queued values are discarded
	_, ok := <-out
	_, err := e.Pop(context.Background())
	fmt.Println(ok, err)
	// Output: false chans: closed
}

func ExampleWithCapacity() {
	e := chans.NewElastic[[]byte](chans.WithCapacity(4096)) // room for a burst without growing
	fmt.Println(e.Len())
	// Output: 0
}

func ExampleWithLimit() {
	e := chans.NewElastic[int](chans.WithLimit(3, chans.DropOldest))
	for i := range 6 {
		e.Push(i)
	}
	buf := make([]int, 6)
	n, _ := e.PopMany(context.Background(), buf)
	fmt.Println(buf[:n], e.Dropped())
	// Output: [3 4 5] 3
}

func ExamplePolicy() {
	for _, p := range []chans.Policy{chans.Block, chans.DropNewest, chans.DropOldest} {
		fmt.Println(p)
	}
	// Output:
	// Block
	// DropNewest
	// DropOldest
}

func ExampleNewDropNewest() {
	d := chans.NewDropNewest[string](2)
	for _, s := range []string{"a", "b", "c"} {
		if !d.Send(s) {
			fmt.Println("dropped", s)
		}
	}
	d.Close()
	for s := range d.Out() {
		fmt.Println(s)
	}
	fmt.Println("dropped so far:", d.Dropped())
	// Output:
	// dropped c
	// a
	// b
	// dropped so far: 1
}

func ExampleDropNewestChan_Len() {
	d := chans.NewDropNewest[int](8)
	d.Send(1)
	fmt.Println(d.Len(), d.Cap())
	// Output: 1 8
}

func ExampleNewDropOldest() {
	d := chans.NewDropOldest[string](2)
	for _, s := range []string{"a", "b", "c"} {
		if !d.Send(s) {
			fmt.Println("made room for", s)
		}
	}
	d.Close()
	for {
		s, err := d.Recv(context.Background())
		if err != nil {
			break
		}
		fmt.Println(s)
	}
	fmt.Println("dropped so far:", d.Dropped())
	// Output:
	// made room for c
	// b
	// c
	// dropped so far: 1
}

func ExampleDropOldestQueue_TryRecv() {
	d := chans.NewDropOldest[int](4)
	d.Send(7)
	v, ok := d.TryRecv()
	fmt.Println(v, ok, d.Len())
	_, ok = d.TryRecv()
	fmt.Println(ok)
	// Output:
	// 7 true 0
	// false
}

func ExampleNewElasticChan() {
	c := chans.NewElasticChan[string]()
	defer c.Close()
	for _, w := range []string{"never", "blocks", "the", "sender"} {
		c.In() <- w // no receiver yet: the relay queues what Out has no room for
	}
	close(c.In())
	for w := range c.Out() {
		fmt.Print(w, " ")
	}
	fmt.Println()
	// Output: never blocks the sender
}

func ExampleElasticChan_In() {
	c := chans.NewElasticChan[int]()
	defer c.Close()
	go func() {
		defer close(c.In()) // ends the input: Out closes once drained
		for i := range 100_000 {
			c.In() <- i
		}
	}()
	n := 0
	for range c.Out() {
		n++
	}
	fmt.Println(n)
	// Output: 100000
}

func ExampleElasticChan_Out() {
	c := chans.NewElasticChan[int]()
	defer c.Close()
	c.In() <- 1
	c.In() <- 2
	fmt.Println(<-c.Out(), <-c.Out())
	// Output: 1 2
}

func ExampleElasticChan_Len() {
	c := chans.NewElasticChan[int]()
	defer c.Close()
	for i := range 3 {
		c.In() <- i
	}
	fmt.Println(c.Len() <= 3) // a snapshot: values in transit may be missed
	for range 3 {
		<-c.Out()
	}
	fmt.Println(c.Len())
	// Output:
	// true
	// 0
}

func ExampleElasticChan_Close() {
	ctx, cancel := context.WithCancel(context.Background())
	c := chans.NewElasticChan[int]()
	stop := context.AfterFunc(ctx, c.Close) // tie the relay to ctx
	defer stop()
	c.In() <- 1
	cancel()
	<-ctx.Done()
	c.Close() // waits for the relay; Out is then closed
	for range c.Out() {
	}
	fmt.Println("stopped")
	// Output: stopped
}
