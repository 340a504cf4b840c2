package chans_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/chans"
	"github.com/sluicehq/sluice/internal/seeds"
)

// item is a value tagged with its input and its place in that input.
type item struct{ src, seq int }

// checkMerged reads out to its close and checks that it carried exactly
// counts[s] items from each source s, in order per source.
func checkMerged(t *testing.T, out <-chan item, counts []int) {
	t.Helper()
	next := make([]int, len(counts))
	for it := range out {
		if it.src < 0 || it.src >= len(counts) {
			t.Fatalf("got item from source %d, want a source in [0, %d)", it.src, len(counts))
		}
		if it.seq != next[it.src] {
			t.Fatalf("source %d: got item %d, want %d (lost, duplicated or reordered)", it.src, it.seq, next[it.src])
		}
		next[it.src]++
	}
	for s, n := range next {
		if n != counts[s] {
			t.Fatalf("source %d: got %d items, want %d", s, n, counts[s])
		}
	}
}

// feed starts one producer per input, sending counts[s] items then closing.
func feed(counts []int, buffer func(s int) int) []<-chan item {
	ins := make([]<-chan item, len(counts))
	for s, n := range counts {
		ch := make(chan item, buffer(s))
		ins[s] = ch
		go func() {
			defer close(ch)
			for k := range n {
				ch <- item{s, k}
			}
		}()
	}
	return ins
}

func TestMergeDeliversEveryValueOnceInOrderPerInput(t *testing.T) {
	for _, sources := range []int{1, 2, 7, 8, 9, 33, 100, 1000} {
		for _, per := range []int{0, 1, 10, 300} {
			t.Run(fmt.Sprintf("sources=%d/per=%d", sources, per), func(t *testing.T) {
				counts := make([]int, sources)
				for s := range counts {
					counts[s] = per
				}
				ins := feed(counts, func(s int) int { return s % 6 }) // buffered 0 to 5
				checkMerged(t, chans.Merge(ins...), counts)
			})
		}
	}
}

func TestMergeOfNoInputsIsClosed(t *testing.T) {
	_, ok := <-chans.Merge[int]()
	if ok {
		t.Fatalf("receive from Merge() got ok=true, want a closed channel")
	}
}

func TestMergePanicsOnNilInput(t *testing.T) {
	defer func() {
		got := fmt.Sprint(recover())
		want := "chans: nil input channel at index 1"
		if got != want {
			t.Fatalf("panic = %q, want %q", got, want)
		}
	}()
	chans.Merge(make(chan int), nil)
}

func TestMergeClosesOnlyAfterEveryInputCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ins := make([]chan int, 20)
		recv := make([]<-chan int, len(ins))
		for i := range ins {
			ins[i] = make(chan int, 1)
			recv[i] = ins[i]
		}
		out := chans.Merge(recv...)
		for i := range ins[:19] {
			ins[i] <- i
			close(ins[i])
		}
		for range 19 {
			<-out
		}
		synctest.Wait() // every merging goroutine is parked
		select {
		case v, ok := <-out:
			t.Fatalf("with one input open, out gave %d, %v; want it to block", v, ok)
		default:
		}
		time.Sleep(time.Hour) // still nothing: no polling, no timeout
		ins[19] <- 19
		if v := <-out; v != 19 {
			t.Fatalf("got %d, want 19", v)
		}
		close(ins[19])
		if v, ok := <-out; ok {
			t.Fatalf("after the last input closed got %d, want out closed", v)
		}
	})
}

func TestMergeDeliversATrickleWhileParked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const sources = 100
		ins := make([]chan int, sources)
		recv := make([]<-chan int, sources)
		for i := range ins {
			ins[i] = make(chan int) // unbuffered: only a blocked sender
			recv[i] = ins[i]
		}
		out := chans.Merge(recv...)
		for k := range 300 {
			s := (k * 37) % sources
			go func() { ins[s] <- k }()
			if got := <-out; got != k {
				t.Fatalf("got %d, want %d", got, k)
			}
			time.Sleep(time.Millisecond)
		}
		for _, c := range ins {
			close(c)
		}
		for v := range out {
			t.Fatalf("got %d after every input closed, want none", v)
		}
	})
}

func TestMergeContextClosesOutputWhenCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		ins := make([]<-chan int, 50)
		for i := range ins {
			ins[i] = make(chan int) // never sends, never closes
		}
		out := chans.MergeContext(ctx, ins...)
		time.Sleep(time.Second)
		cancel()
		if v, ok := <-out; ok {
			t.Fatalf("after cancel got %d, want out closed", v)
		}
	})
}

func TestMergeContextStopsABlockedSender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		in := make(chan int)
		go func() {
			for i := 0; ; i++ {
				select {
				case in <- i:
				case <-ctx.Done():
					return
				}
			}
		}()
		out := chans.MergeContext(ctx, in)
		for i := range 10 {
			if v := <-out; v != i {
				t.Fatalf("got %d, want %d", v, i)
			}
		}
		synctest.Wait() // the output buffer is full: the merger is parked on it
		cancel()
		n := 0
		for range out {
			n++
		}
		if n > 1024+1 {
			t.Fatalf("drained %d values after cancel, want at most the buffer plus one", n)
		}
	})
}

func TestMergeHammerManyProducers(t *testing.T) {
	sources, per := 64, 2000
	if testing.Short() {
		per = 200
	}
	counts := make([]int, sources)
	for s := range counts {
		counts[s] = per + s
	}
	for round := range 3 {
		ins := feed(counts, func(s int) int { return (s + round) % 3 * 4 })
		checkMerged(t, chans.Merge(ins...), counts)
	}
}

func TestMergeReadersMayBeMany(t *testing.T) {
	counts := []int{5000, 5000, 5000, 5000}
	out := chans.Merge(feed(counts, func(int) int { return 5 })...)
	var mu sync.Mutex
	seen := make(map[item]bool)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for it := range out {
				mu.Lock()
				if seen[it] {
					t.Errorf("item %v received twice", it)
				}
				seen[it] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if got, want := len(seen), 20000; got != want {
		t.Fatalf("received %d distinct items, want %d", got, want)
	}
}

// The seed's merges are baselines: check they merge correctly too, so that
// a benchmark against them compares like with like.
func TestSeedMergesDeliverEveryValue(t *testing.T) {
	merges := map[string]func(...<-chan item) <-chan item{
		"Canonical": seeds.MergeCanonical[item],
		"Reflect":   seeds.MergeReflect[item],
		"Batch":     seeds.MergeBatch[item],
		"Loop":      seeds.MergeLoop[item],
	}
	for name, merge := range merges {
		for _, sources := range []int{1, 2, 3, 4, 5, 13} {
			t.Run(fmt.Sprintf("%s/sources=%d", name, sources), func(t *testing.T) {
				counts := make([]int, sources)
				for s := range counts {
					counts[s] = 50
				}
				checkMerged(t, merge(feed(counts, func(int) int { return 5 })...), counts)
			})
		}
	}
}

func TestFaninHarnessSumMatchesItsSends(t *testing.T) {
	for _, n := range []int{1, 2, 3, 100} {
		for _, count := range []int{0, 7, 10 * n} {
			w, r := seeds.FaninSources(n)
			out := chans.Merge(r...)
			wg := seeds.FaninSend(w, count)
			got := seeds.FaninRead(out, count)
			wg.Wait()
			seeds.FaninClose(w)
			for range out {
			}
			if want := seeds.FaninSum(n, count); got != want {
				t.Fatalf("n=%d count=%d: read sum %d, want %d", n, count, got, want)
			}
		}
	}
}

// FuzzMerge merges random inputs (count, buffers, lengths, and when each
// producer pauses) and checks the result against the model: every item
// exactly once, in order per input, output closed at the end.
func FuzzMerge(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(20))
	f.Add(uint64(2), uint8(1), uint8(0))
	f.Add(uint64(3), uint8(40), uint8(5))
	f.Add(uint64(4), uint8(200), uint8(2))
	f.Add(uint64(5), uint8(9), uint8(100))
	f.Fuzz(func(t *testing.T, seed uint64, sources, maxPer uint8) {
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		counts := make([]int, sources)
		for s := range counts {
			counts[s] = rng.IntN(int(maxPer) + 1)
		}
		buffers := make([]int, sources)
		for s := range buffers {
			buffers[s] = rng.IntN(8)
		}
		ins := feed(counts, func(s int) int { return buffers[s] })
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var out <-chan item
		if seed%2 == 0 {
			out = chans.Merge(ins...)
		} else {
			out = chans.MergeContext(ctx, ins...)
		}
		checkMerged(t, out, counts)
	})
}

func TestMergePanicMessageNamesPackage(t *testing.T) {
	defer func() {
		if msg := fmt.Sprint(recover()); !strings.HasPrefix(msg, "chans: ") {
			t.Fatalf("panic %q does not start with %q", msg, "chans: ")
		}
	}()
	chans.MergeContext[int](context.Background(), nil)
}

// The same channel passed more than once is one input: its values arrive
// once each, in the order they were sent. (With more than eight entries its
// copies went to different goroutines, which received from it at the same
// time and could deliver its values out of order.)
func TestMergeOfOneChannelPassedManyTimesKeepsItsOrder(t *testing.T) {
	for _, copies := range []int{2, 9, 40, 200} {
		c := make(chan item, 64)
		ins := make([]<-chan item, copies)
		for i := range ins {
			ins[i] = c
		}
		out := chans.Merge(ins...)
		const n = 50_000
		go func() {
			for k := range n {
				c <- item{0, k}
			}
			close(c)
		}()
		checkMerged(t, out, []int{n})
	}
}
