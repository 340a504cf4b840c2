package chans_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/chans"
)

var cancelled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

func TestElasticChannelsNeverBlockTheSenderAndKeepOrder(t *testing.T) {
	e := chans.NewElastic[int]()
	defer e.Close()
	in, out := e.In(), e.Out()
	const n = 100_000
	for i := range n { // no reader yet: must not block
		in <- i
	}
	close(in)
	i := 0
	for v := range out {
		if v != i {
			t.Fatalf("received %d, want %d", v, i)
		}
		i++
	}
	if i != n {
		t.Fatalf("received %d values before Out closed, want %d", i, n)
	}
}

func TestElasticClosingInClosesOutAfterDraining(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := chans.NewElastic[string]()
		e.Push("a")
		e.In() <- "b"
		close(e.In())
		synctest.Wait()
		if got := e.Len(); got != 2 {
			t.Fatalf("Len() = %d, want 2", got)
		}
		var got []string
		for v := range e.Out() {
			got = append(got, v)
		}
		if fmt.Sprint(got) != "[a b]" {
			t.Fatalf("Out gave %v, want [a b]", got)
		}
		if _, err := e.Pop(context.Background()); !errors.Is(err, chans.ErrClosed) {
			t.Fatalf("Pop after the end: err = %v, want ErrClosed", err)
		}
	})
}

func TestElasticPopWaitsForPush(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := chans.NewElastic[int]()
		go func() {
			time.Sleep(time.Minute)
			e.Push(7)
		}()
		start := time.Now()
		v, err := e.Pop(context.Background())
		if v != 7 || err != nil {
			t.Fatalf("Pop() = %d, %v; want 7, nil", v, err)
		}
		if waited := time.Since(start); waited != time.Minute {
			t.Fatalf("Pop returned after %v, want 1m0s", waited)
		}
	})
}

func TestElasticPopReturnsContextError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := chans.NewElastic[int]()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := e.Pop(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Pop on an empty Elastic: err = %v, want DeadlineExceeded", err)
		}
	})
}

func TestElasticPopManyTakesWhatIsThereOldestFirst(t *testing.T) {
	e := chans.NewElastic[int](chans.WithCapacity(2))
	for i := range 5 {
		e.Push(i)
	}
	dst := make([]int, 3)
	n, err := e.PopMany(context.Background(), dst)
	if n != 3 || err != nil || fmt.Sprint(dst) != "[0 1 2]" {
		t.Fatalf("PopMany = %d, %v, dst %v; want 3, nil, [0 1 2]", n, err, dst)
	}
	n, err = e.PopMany(context.Background(), dst)
	if n != 2 || err != nil || fmt.Sprint(dst[:n]) != "[3 4]" {
		t.Fatalf("PopMany = %d, %v, dst %v; want 2, nil, [3 4]", n, err, dst[:n])
	}
	if n, err := e.PopMany(context.Background(), nil); n != 0 || err != nil {
		t.Fatalf("PopMany(nil) = %d, %v; want 0, nil", n, err)
	}
}

func TestElasticPushManyQueuesInOrderAndCountsDrops(t *testing.T) {
	e := chans.NewElastic[int]()
	if n := e.PushMany(1, 2, 3); n != 3 {
		t.Fatalf("PushMany(1, 2, 3) = %d, want 3", n)
	}
	e.Push(4)
	dst := make([]int, 8)
	n, _ := e.PopMany(context.Background(), dst)
	if got := fmt.Sprint(dst[:n]); got != "[1 2 3 4]" {
		t.Fatalf("popped %s, want [1 2 3 4]", got)
	}
	limited := chans.NewElastic[int](chans.WithLimit(2, chans.DropNewest))
	if n := limited.PushMany(1, 2, 3, 4); n != 2 || limited.Dropped() != 2 {
		t.Fatalf("PushMany at a limit of 2 = %d, Dropped %d; want 2, 2", n, limited.Dropped())
	}
	limited.Close()
	if n := limited.PushMany(5); n != 0 {
		t.Fatalf("PushMany after Close = %d, want 0", n)
	}
}

func TestElasticPushPanicsAfterInClosed(t *testing.T) {
	e := chans.NewElastic[int]()
	close(e.In())
	for e.Len() != 0 || !popsClosed(e) {
	}
	defer func() {
		if got, want := fmt.Sprint(recover()), "chans: Push on Elastic after its In channel was closed"; got != want {
			t.Fatalf("panic = %q, want %q", got, want)
		}
	}()
	e.Push(1)
}

func popsClosed(e *chans.Elastic[int]) bool {
	_, err := e.Pop(cancelled)
	return errors.Is(err, chans.ErrClosed)
}

func TestElasticCloseStopsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := chans.NewElastic[int]()
		in, out := e.In(), e.Out()
		for i := range 1000 {
			in <- i
		}
		popErr := make(chan error)
		empty := chans.NewElastic[int]()
		go func() {
			_, err := empty.Pop(context.Background())
			popErr <- err
		}()
		synctest.Wait()
		e.Close()
		empty.Close()
		if err := <-popErr; !errors.Is(err, chans.ErrClosed) {
			t.Fatalf("waiting Pop after Close: err = %v, want ErrClosed", err)
		}
		n := 0
		for range out {
			n++
		}
		if n > 2048+1 {
			t.Fatalf("Out gave %d values after Close, want at most its buffer", n)
		}
		if e.Push(1) {
			t.Fatalf("Push after Close = true, want false")
		}
		e.Close() // harmless
	})
}

func TestElasticLimitBlockMakesPushWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := chans.NewElastic[int](chans.WithLimit(2, chans.Block))
		e.Push(1)
		e.Push(2)
		pushed := make(chan bool)
		go func() { pushed <- e.Push(3) }()
		synctest.Wait()
		select {
		case <-pushed:
			t.Fatalf("Push at the limit returned, want it to wait")
		default:
		}
		if v, _ := e.Pop(context.Background()); v != 1 {
			t.Fatalf("Pop() = %d, want 1", v)
		}
		if ok := <-pushed; !ok {
			t.Fatalf("Push after room was made = false, want true")
		}
		if got := e.Len(); got != 2 {
			t.Fatalf("Len() = %d, want 2", got)
		}
	})
}

func TestElasticLimitBlockHoldsBackIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := chans.NewElastic[int](chans.WithLimit(3, chans.Block))
		defer e.Close()
		in := e.In()
		var sent atomic.Int32
		go func() {
			for i := range 100 {
				in <- i
				sent.Add(1)
			}
		}()
		synctest.Wait()
		// 3 in the queue and 3 in In's buffer (the limit caps it).
		if got := sent.Load(); got != 6 {
			t.Fatalf("sends completed with no reader = %d, want 6", got)
		}
		for i := range 100 {
			if v, err := e.Pop(context.Background()); v != i || err != nil {
				t.Fatalf("Pop() = %d, %v; want %d, nil", v, err, i)
			}
		}
	})
}

func TestElasticDropPoliciesCountWhatTheyDrop(t *testing.T) {
	for _, tc := range []struct {
		policy chans.Policy
		want   string
	}{
		{chans.DropNewest, "[0 1 2]"},
		{chans.DropOldest, "[7 8 9]"},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			e := chans.NewElastic[int](chans.WithLimit(3, tc.policy))
			for i := range 10 {
				e.Push(i)
			}
			if got := e.Dropped(); got != 7 {
				t.Fatalf("Dropped() = %d, want 7", got)
			}
			dst := make([]int, 10)
			n, _ := e.PopMany(context.Background(), dst)
			if got := fmt.Sprint(dst[:n]); got != tc.want {
				t.Fatalf("kept %s, want %s", got, tc.want)
			}
		})
	}
}

func TestElasticOptionsPanicOnBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"capacity", func() { chans.WithCapacity(0) }, "chans: capacity must be ≥ 1, got 0"},
		{"limit", func() { chans.WithLimit(-1, chans.Block) }, "chans: limit must be ≥ 1, got -1"},
		{"policy", func() { chans.WithLimit(1, chans.Policy(9)) }, "chans: unknown policy 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if got := fmt.Sprint(recover()); got != tc.want {
					t.Fatalf("panic = %q, want %q", got, tc.want)
				}
			}()
			tc.f()
		})
	}
}

func TestElasticOutNotCalledLeavesValuesForPop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := chans.NewElastic[int]()
		for i := range 10 {
			e.In() <- i
		}
		close(e.In())
		synctest.Wait() // the goroutine has queued everything and waits
		for i := range 10 {
			if v, err := e.Pop(context.Background()); v != i || err != nil {
				t.Fatalf("Pop() = %d, %v; want %d, nil", v, err, i)
			}
		}
		if _, err := e.Pop(context.Background()); !errors.Is(err, chans.ErrClosed) {
			t.Fatalf("Pop after the end: err = %v, want ErrClosed", err)
		}
		synctest.Wait() // and the goroutine has returned: goleak checks
	})
}

// hammer runs producers×per values through an Elastic with the given ways in
// and out and checks every value arrives exactly once, in order per
// producer. Consumer c receives from Out when viaOut(c), else with PopMany.
func hammer(t *testing.T, e *chans.Elastic[item], producers, consumers, per int, viaIn bool, viaOut func(c int) bool) {
	t.Helper()
	var pwg sync.WaitGroup
	for p := range producers {
		pwg.Go(func() {
			for k := range per {
				if viaIn {
					e.In() <- item{p, k}
				} else {
					e.Push(item{p, k})
				}
			}
		})
	}
	go func() {
		pwg.Wait()
		close(e.In())
	}()
	got := make([][]item, consumers)
	var cwg sync.WaitGroup
	for c := range consumers {
		cwg.Go(func() {
			if viaOut(c) {
				for it := range e.Out() {
					got[c] = append(got[c], it)
				}
				return
			}
			buf := make([]item, 1+c*7)
			for {
				n, err := e.PopMany(context.Background(), buf)
				if err != nil {
					return
				}
				got[c] = append(got[c], buf[:n]...)
			}
		})
	}
	cwg.Wait()
	total := 0
	seen := make(map[item]bool)
	for c, items := range got {
		last := make(map[int]int)
		for _, it := range items {
			if seen[it] {
				t.Fatalf("item %v delivered twice", it)
			}
			seen[it] = true
			if prev, ok := last[it.src]; ok && it.seq <= prev {
				t.Fatalf("consumer %d got producer %d's item %d after %d", c, it.src, it.seq, prev)
			}
			last[it.src] = it.seq
		}
		total += len(items)
	}
	if want := producers * per; total != want {
		t.Fatalf("delivered %d items, want %d", total, want)
	}
}

func TestElasticHammer(t *testing.T) {
	per := 5000
	if testing.Short() {
		per = 500
	}
	all := func(int) bool { return true }
	none := func(int) bool { return false }
	even := func(c int) bool { return c%2 == 0 }
	for _, tc := range []struct {
		name   string
		viaIn  bool
		viaOut func(c int) bool
		opts   []chans.ElasticOption
	}{
		{"Push/PopMany", false, none, nil},
		{"In/Out", true, all, nil},
		{"Push/Out", false, all, nil},
		{"In/PopMany", true, none, nil},
		{"In/Out+PopMany", true, even, nil},
		{"Push/Out+PopMany/tiny segments", false, even, []chans.ElasticOption{chans.WithCapacity(1)}},
		{"Push/PopMany/limit", false, none, []chans.ElasticOption{chans.WithLimit(10, chans.Block)}},
		{"In/Out/limit", true, all, []chans.ElasticOption{chans.WithLimit(10, chans.Block), chans.WithCapacity(1)}},
		{"In/Out+PopMany/limit", true, even, []chans.ElasticOption{chans.WithLimit(10, chans.Block)}},
		{"Push/PopMany/tiny segments", false, none, []chans.ElasticOption{chans.WithCapacity(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := chans.NewElastic[item](tc.opts...)
			defer e.Close()
			hammer(t, e, 8, 4, per, tc.viaIn, tc.viaOut)
		})
	}
}

// TestElasticPushManyFromManyProducersKeepsEachBatchInOrder runs four
// producers pushing runs of values with PushMany, growing the queue from a
// capacity of 1, against one consumer; every value must arrive once, in
// order per producer.
func TestElasticPushManyFromManyProducersKeepsEachBatchInOrder(t *testing.T) {
	const producers, per = 4, 20000
	e := chans.NewElastic[item](chans.WithCapacity(1))
	defer e.Close()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			batch := make([]item, 0, 37)
			for k := range per {
				batch = append(batch, item{p, k})
				if len(batch) == cap(batch) || k == per-1 {
					if n := e.PushMany(batch...); n != len(batch) {
						t.Errorf("PushMany = %d, want %d", n, len(batch))
					}
					batch = batch[:0]
				}
			}
		})
	}
	next := make([]int, producers)
	buf := make([]item, 100)
	for got := 0; got < producers*per; {
		n, err := e.PopMany(context.Background(), buf)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range buf[:n] {
			if it.seq != next[it.src] {
				t.Fatalf("got producer %d's item %d, want %d", it.src, it.seq, next[it.src])
			}
			next[it.src]++
		}
		got += n
	}
	wg.Wait()
	if got := e.Len(); got != 0 {
		t.Fatalf("Len() = %d after taking everything, want 0", got)
	}
}

// Close discards everything queued, and nothing receives from In after it:
// a Pop after Close returns ErrClosed even when In's buffer still held
// values at Close. (The goroutine, when Close caught it between rounds,
// moved what In held into the emptied queue before it saw Close, and Pop
// then returned those values.)
func TestElasticPopAfterCloseFindsNothingFromIn(t *testing.T) {
	for i := range 200 {
		e := chans.NewElastic[int]()
		in := e.In()
		for k := range 5 {
			in <- k
		}
		e.Close()
		if v, err := e.Pop(cancelled); !errors.Is(err, chans.ErrClosed) {
			t.Fatalf("round %d: Pop after Close = %d, %v; want ErrClosed", i, v, err)
		}
	}
}

// PopMany with an empty dst returns at once, with ErrClosed once Pop would
// return it, as the ring queues' PopMany does: a consumer loop that stops
// on an error must stop. (It returned 0, nil for ever.)
func TestElasticPopManyWithEmptyDstReportsTheEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := chans.NewElastic[int]()
		e.Push(1)
		if n, err := e.PopMany(context.Background(), nil); n != 0 || err != nil {
			t.Fatalf("PopMany(nil) on an open Elastic = %d, %v; want 0, nil", n, err)
		}
		close(e.In())
		synctest.Wait()
		if n, err := e.PopMany(context.Background(), nil); n != 0 || err != nil {
			t.Fatalf("PopMany(nil) with a value left = %d, %v; want 0, nil", n, err)
		}
		e.Pop(context.Background())
		if n, err := e.PopMany(context.Background(), nil); n != 0 || !errors.Is(err, chans.ErrClosed) {
			t.Fatalf("PopMany(nil) after the input ended and drained = %d, %v; want 0, ErrClosed", n, err)
		}
		closed := chans.NewElastic[int]()
		closed.Push(1)
		closed.Close()
		if n, err := closed.PopMany(context.Background(), []int{}); n != 0 || !errors.Is(err, chans.ErrClosed) {
			t.Fatalf("PopMany(empty) after Close = %d, %v; want 0, ErrClosed", n, err)
		}
	})
}

// Once Close has returned and Out has been drained to its close, nothing is
// left in an Elastic: Len is 0. (The value the goroutine held for a full Out
// stayed counted after Close discarded it.)
func TestElasticLenIsZeroAfterCloseAndDrain(t *testing.T) {
	for round := range 50 {
		e := chans.NewElastic[int]()
		out := e.Out()
		for i := range cap(out) + 3 { // Out full, one held, the rest queued
			e.Push(i)
		}
		for range 3 {
			runtime.Gosched() // let the goroutine fill Out
		}
		e.Close()
		for range out {
		}
		if got := e.Len(); got != 0 {
			t.Fatalf("round %d: Len() = %d after Close and Out drained, want 0", round, got)
		}
	}
}
