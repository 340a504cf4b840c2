package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
)

func Example() {
	p := sluice.New(context.Background())
	words := sluice.FromSlice(p, "words", strings.Fields("the quick brown fox jumps over the lazy dog"))
	upper := sluice.OrderedMap(p, "upper", words, 4, func(_ context.Context, w string) (string, error) {
		return strings.ToUpper(w), nil
	})
	long := sluice.Filter(p, "long", upper, 1, func(_ context.Context, w string) (bool, error) { return len(w) > 3, nil })
	batches := sluice.Batch(p, "pairs", long, 2, 10*time.Millisecond)
	sluice.ForEach(p, "print", batches, 1, func(_ context.Context, b []string) error {
		fmt.Println(b)
		return nil
	})
	if err := p.Wait(); err != nil {
		fmt.Println("error:", err)
	}
	// Output:
	// [QUICK BROWN]
	// [JUMPS OVER]
	// [LAZY]
}

func ExampleNew() {
	p := sluice.New(context.Background(), sluice.Named("example"))
	sum := sluice.Reduce(p, "sum", sluice.FromSlice(p, "nums", []int{1, 2, 3}), 0, func(a, v int) int { return a + v })
	err := p.Wait()
	fmt.Println(p.Name(), sum.Value(), err)
	// Output: example 6 <nil>
}

func ExamplePipeline_Wait_error() {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "nums", []int{1, 2, 3, 4})
	sluice.ForEach(p, "check", src, 1, func(_ context.Context, v int) error {
		if v == 3 {
			return errors.New("three is not allowed")
		}
		return nil
	})
	fmt.Println(p.Wait())
	// Output: sluice: stage "check": three is not allowed
}

func ExampleFrom() {
	p := sluice.New(context.Background())
	squares := sluice.From(p, "squares", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := 1; i <= 5; i++ {
			if !out.Send(i * i) {
				return ctx.Err()
			}
		}
		return nil
	})
	got := sluice.Collect(p, "collect", squares)
	_ = p.Wait()
	fmt.Println(got.Value())
	// Output: [1 4 9 16 25]
}

func ExampleFromSeq() {
	p := sluice.New(context.Background())
	got := sluice.Collect(p, "collect", sluice.FromSeq(p, "letters", slices.Values([]string{"a", "b", "c"})))
	_ = p.Wait()
	fmt.Println(got.Value())
	// Output: [a b c]
}

func ExampleFromChan() {
	ch := make(chan int, 3)
	ch <- 10
	ch <- 20
	ch <- 30
	close(ch)
	p := sluice.New(context.Background())
	sum := sluice.Reduce(p, "sum", sluice.FromChan(p, "chan", ch), 0, func(a, v int) int { return a + v })
	_ = p.Wait()
	fmt.Println(sum.Value())
	// Output: 60
}

func ExampleMap() {
	p := sluice.New(context.Background())
	lens := sluice.Map(p, "len", sluice.FromSlice(p, "words", []string{"a", "bb", "ccc"}), 3,
		func(_ context.Context, w string) (int, error) { return len(w), nil })
	total := sluice.Reduce(p, "total", lens, 0, func(a, v int) int { return a + v })
	_ = p.Wait()
	fmt.Println(total.Value()) // with 3 workers the order varies; the sum does not
	// Output: 6
}

func ExampleOrderedMap() {
	p := sluice.New(context.Background())
	out := sluice.OrderedMap(p, "square", sluice.FromSlice(p, "nums", []int{1, 2, 3, 4, 5, 6}), 3,
		func(_ context.Context, v int) (int, error) { return v * v, nil })
	got := sluice.Collect(p, "collect", out)
	_ = p.Wait()
	fmt.Println(got.Value())
	// Output: [1 4 9 16 25 36]
}

func ExampleFilter() {
	p := sluice.New(context.Background())
	odd := sluice.Filter(p, "odd", sluice.FromSlice(p, "nums", []int{1, 2, 3, 4, 5}), 1,
		func(_ context.Context, v int) (bool, error) { return v%2 == 1, nil })
	got := sluice.Collect(p, "collect", odd)
	_ = p.Wait()
	fmt.Println(got.Value())
	// Output: [1 3 5]
}

func ExampleFlatMap() {
	p := sluice.New(context.Background())
	chars := sluice.FlatMap(p, "chars", sluice.FromSlice(p, "words", []string{"go", "fast"}), 1,
		func(_ context.Context, w string, emit func(string) bool) error {
			for _, r := range w {
				if !emit(string(r)) {
					break
				}
			}
			return nil
		})
	got := sluice.Collect(p, "collect", chars)
	_ = p.Wait()
	fmt.Println(got.Value())
	// Output: [g o f a s t]
}

func ExampleBatch() {
	p := sluice.New(context.Background())
	batches := sluice.Batch(p, "threes", sluice.FromSlice(p, "nums", []int{1, 2, 3, 4, 5, 6, 7}), 3, time.Second)
	got := sluice.Collect(p, "collect", batches)
	_ = p.Wait()
	fmt.Println(got.Value())
	// Output: [[1 2 3] [4 5 6] [7]]
}

func ExampleUnbatch() {
	p := sluice.New(context.Background())
	flat := sluice.Unbatch(p, "flat", sluice.FromSlice(p, "batches", [][]int{{1, 2}, {}, {3}}))
	got := sluice.Collect(p, "collect", flat)
	_ = p.Wait()
	fmt.Println(got.Value())
	// Output: [1 2 3]
}

func ExampleMerge() {
	p := sluice.New(context.Background())
	a := sluice.FromSlice(p, "a", []int{1, 2, 3})
	b := sluice.FromSlice(p, "b", []int{10, 20})
	got := sluice.Collect(p, "collect", sluice.Merge(p, "both", []sluice.Stream[int]{a, b}))
	_ = p.Wait()
	vs := got.Value()
	slices.Sort(vs) // inputs interleave in no fixed order
	fmt.Println(vs)
	// Output: [1 2 3 10 20]
}

func ExamplePartition() {
	type order struct {
		user  string
		cents int
	}
	orders := []order{{"ann", 5}, {"bob", 7}, {"ann", 1}, {"cy", 2}, {"bob", 3}, {"cy", 4}}
	p := sluice.New(context.Background())
	parts := sluice.Partition(p, "by-user", sluice.FromSlice(p, "orders", orders), 2,
		func(o order) string { return o.user })
	a := sluice.Collect(p, "a", parts[0])
	b := sluice.Collect(p, "b", parts[1])
	_ = p.Wait()
	// Which user lands in which stream varies between runs; that each
	// user's orders stay together, in order, does not.
	byUser := map[string][]int{}
	streamOf := map[string]int{}
	together := true
	for i, part := range [][]order{a.Value(), b.Value()} {
		for _, o := range part {
			if s, ok := streamOf[o.user]; ok && s != i {
				together = false
			}
			streamOf[o.user] = i
			byUser[o.user] = append(byUser[o.user], o.cents)
		}
	}
	fmt.Println(together, byUser["ann"], byUser["bob"], byUser["cy"])
	// Output: true [5 1] [7 3] [2 4]
}

func ExampleBroadcast() {
	p := sluice.New(context.Background())
	outs := sluice.Broadcast(p, "copy", sluice.FromSlice(p, "nums", []int{1, 2, 3}), 2)
	sum := sluice.Reduce(p, "sum", outs[0], 0, func(a, v int) int { return a + v })
	all := sluice.Collect(p, "all", outs[1])
	_ = p.Wait()
	fmt.Println(sum.Value(), all.Value())
	// Output: 6 [1 2 3]
}

func ExampleForEach() {
	p := sluice.New(context.Background())
	sluice.ForEach(p, "print", sluice.FromSlice(p, "nums", []int{1, 2, 3}), 1, func(_ context.Context, v int) error {
		fmt.Println(v)
		return nil
	})
	_ = p.Wait()
	// Output:
	// 1
	// 2
	// 3
}

func ExampleReduce() {
	p := sluice.New(context.Background())
	longest := sluice.Reduce(p, "longest", sluice.FromSlice(p, "words", []string{"go", "pipeline", "fast"}), "",
		func(best, w string) string {
			if len(w) > len(best) {
				return w
			}
			return best
		})
	_ = p.Wait()
	fmt.Println(longest.Value())
	// Output: pipeline
}

func ExampleCollect() {
	p := sluice.New(context.Background())
	got := sluice.Collect(p, "collect", sluice.FromSlice(p, "nums", []int{3, 1, 2}))
	_ = p.Wait()
	fmt.Println(got.Value())
	// Output: [3 1 2]
}

func ExampleToChan() {
	p := sluice.New(context.Background())
	for v := range sluice.ToChan(p, "out", sluice.FromSlice(p, "nums", []int{7, 8, 9})) {
		fmt.Println(v)
	}
	_ = p.Wait()
	// Output:
	// 7
	// 8
	// 9
}

func ExampleOnFull() {
	p := sluice.New(context.Background())
	// The source never waits: when the edge is full it drops the newest
	// items and counts them.
	src := sluice.FromSlice(p, "ticks", ints(10_000), sluice.Buffer(16), sluice.OnFull(sluice.DropNewest))
	got := sluice.Collect(p, "collect", src)
	_ = p.Wait()
	e := p.Stats().Edges[0]
	fmt.Println(int64(len(got.Value()))+e.Dropped == 10_000, e.Policy)
	// Output: true drop-newest
}

func ExamplePipeline_Stats() {
	p := sluice.New(context.Background())
	even := sluice.Filter(p, "even", sluice.FromSlice(p, "nums", ints(100)), 2,
		func(_ context.Context, v int) (bool, error) { return v%2 == 0, nil })
	sluice.ForEach(p, "sink", even, 1, func(context.Context, int) error { return nil })
	_ = p.Wait()
	for _, s := range p.Stats().Stages {
		fmt.Printf("%-5s %-8s workers=%d in=%d out=%d\n", s.Name, s.Kind, s.Workers, s.In, s.Out)
	}
	// Output:
	// nums  source   workers=1 in=0 out=100
	// even  filter   workers=2 in=100 out=50
	// sink  for-each workers=1 in=50 out=0
}

func ExampleForEachChunk() {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "rows", ints(1000))
	rows := 0
	sluice.ForEachChunk(p, "bulk-insert", src, 1, func(_ context.Context, items []int) error {
		rows += len(items) // one round trip per chunk, however many were ready
		return nil
	})
	_ = p.Wait()
	fmt.Println(rows)
	// Output: 1000
}

func ExampleEmitter_Await() {
	lines := make(chan string, 2)
	lines <- "a"
	lines <- "b"
	close(lines)
	p := sluice.New(context.Background())
	src := sluice.From(p, "reader", func(ctx context.Context, out *sluice.Emitter[string]) error {
		for {
			var line string
			var ok bool
			if !out.Await(func() { line, ok = <-lines }) {
				return ctx.Err()
			}
			if !ok {
				return nil
			}
			out.Send(line)
		}
	})
	got := sluice.Collect(p, "collect", src)
	_ = p.Wait()
	fmt.Println(got.Value())
	// Output: [a b]
}
