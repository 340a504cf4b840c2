package ring_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/ring"
)

// One producer goroutine hands items to one consumer; Close tells the
// consumer that nothing more will come.
func ExampleNewSPSC() {
	ctx := context.Background()
	q := ring.NewSPSC[string](8)

	go func() {
		defer q.Close()
		for _, s := range []string{"a", "b", "c"} {
			if err := q.Push(ctx, s); err != nil {
				return
			}
		}
	}()

	for {
		s, err := q.Pop(ctx)
		if errors.Is(err, ring.ErrClosed) {
			break
		}
		fmt.Println(s)
	}
	// Output:
	// a
	// b
	// c
}

// Several producers feed one consumer, which takes items in batches.
func ExampleNewMPSC() {
	ctx := context.Background()
	q := ring.NewMPSC[int](64)

	var producers sync.WaitGroup
	for p := range 4 {
		producers.Go(func() {
			batch := []int{p * 100, p*100 + 1, p*100 + 2}
			q.PushMany(ctx, batch)
		})
	}
	go func() { producers.Wait(); q.Close() }()

	sum, count := 0, 0
	dst := make([]int, 16)
	for {
		n, err := q.PopMany(ctx, dst)
		if err != nil {
			break
		}
		for _, v := range dst[:n] {
			sum += v
		}
		count += n
	}
	fmt.Println(count, sum)
	// Output: 12 1812
}

// Two producers and three consumers share one queue.
func ExampleNewMPMC() {
	ctx := context.Background()
	q := ring.NewMPMC[int](16)

	var producers sync.WaitGroup
	for p := range 2 {
		producers.Go(func() {
			for i := range 50 {
				q.Push(ctx, p*50+i)
			}
		})
	}
	go func() { producers.Wait(); q.Close() }()

	var mu sync.Mutex
	seen := make(map[int]bool)
	var consumers sync.WaitGroup
	for range 3 {
		consumers.Go(func() {
			for {
				v, err := q.Pop(ctx)
				if err != nil {
					return
				}
				mu.Lock()
				seen[v] = true
				mu.Unlock()
			}
		})
	}
	consumers.Wait()
	fmt.Println(len(seen), "distinct items")
	// Output: 100 distinct items
}

// TryPush never blocks: a full queue is reported, and the caller decides
// what to do, here drop the item and count it.
func ExampleSPSC_TryPush() {
	q := ring.NewSPSC[int](2)
	dropped := 0
	for i := range 5 {
		if err := q.TryPush(i); errors.Is(err, ring.ErrFull) {
			dropped++
		}
	}
	fmt.Println("queued", q.Len(), "dropped", dropped)
	// Output: queued 2 dropped 3
}

func ExampleSPSC_TryPop() {
	q := ring.NewSPSC[int](2)
	_, err := q.TryPop()
	fmt.Println(err)
	q.TryPush(7)
	v, err := q.TryPop()
	fmt.Println(v, err)
	// Output:
	// ring: queue empty
	// 7 <nil>
}

// TryPushMany takes as many items as fit and says how many.
func ExampleSPSC_TryPushMany() {
	q := ring.NewSPSC[int](4)
	n, err := q.TryPushMany([]int{1, 2, 3, 4, 5, 6})
	fmt.Println(n, err)
	// Output: 4 <nil>
}

func ExampleSPSC_TryPopMany() {
	q := ring.NewSPSC[int](4)
	q.TryPushMany([]int{1, 2, 3})
	dst := make([]int, 2)
	n, _ := q.TryPopMany(dst)
	fmt.Println(dst[:n])
	n, _ = q.TryPopMany(dst)
	fmt.Println(dst[:n])
	// Output:
	// [1 2]
	// [3]
}

// PushMany blocks until every item is in; PopMany returns what is ready,
// up to len(dst), as soon as there is at least one item.
func ExampleSPSC_PushMany() {
	ctx := context.Background()
	q := ring.NewSPSC[int](4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		n, err := q.PushMany(ctx, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
		fmt.Println("pushed", n, err)
		q.Close()
	}()
	total := 0
	dst := make([]int, 3)
	for {
		n, err := q.PopMany(ctx, dst)
		if err != nil {
			break
		}
		for _, v := range dst[:n] {
			total += v
		}
	}
	<-done
	fmt.Println("total", total)
	// Output:
	// pushed 10 <nil>
	// total 55
}

// Pop waits for an item until its context is done.
func ExampleSPSC_Pop() {
	q := ring.NewSPSC[int](4)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := q.Pop(ctx)
	fmt.Println(err)
	// Output: context canceled
}

// After Close, pushes fail and pops drain what is left, then fail.
func ExampleSPSC_Close() {
	ctx := context.Background()
	q := ring.NewSPSC[int](4)
	q.Push(ctx, 1)
	q.Close()
	q.Close() // a second Close does nothing
	fmt.Println(q.Push(ctx, 2))
	v, err := q.Pop(ctx)
	fmt.Println(v, err)
	_, err = q.Pop(ctx)
	fmt.Println(err)
	// Output:
	// ring: queue closed
	// 1 <nil>
	// ring: queue closed
}

func ExampleSPSC_Len() {
	q := ring.NewSPSC[int](8)
	q.TryPushMany([]int{1, 2, 3})
	fmt.Println(q.Len(), q.Cap())
	// Output: 3 8
}

func ExampleMPSC_Push() {
	ctx := context.Background()
	q := ring.NewMPSC[string](4)
	q.Push(ctx, "hello")
	v, _ := q.Pop(ctx)
	fmt.Println(v)
	// Output: hello
}

func ExampleMPSC_TryPushMany() {
	q := ring.NewMPSC[int](4)
	q.TryPush(0)
	n, err := q.TryPushMany([]int{1, 2, 3, 4})
	fmt.Println(n, err, q.Len())
	// Output: 3 <nil> 4
}

func ExampleMPMC_PopMany() {
	ctx := context.Background()
	q := ring.NewMPMC[int](8)
	q.PushMany(ctx, []int{1, 2, 3, 4, 5})
	dst := make([]int, 3)
	n, err := q.PopMany(ctx, dst)
	fmt.Println(dst[:n], err)
	// Output: [1 2 3] <nil>
}

func ExampleMPMC_TryPop() {
	q := ring.NewMPMC[int](2)
	q.TryPush(1)
	q.Close()
	v, err := q.TryPop()
	fmt.Println(v, err)
	_, err = q.TryPop()
	fmt.Println(err)
	// Output:
	// 1 <nil>
	// ring: queue closed
}
