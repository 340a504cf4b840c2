package seeds

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

// The baselines must be correct to be worth measuring against, and must not
// leak: every test here drains what it starts.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSeedMergesDeliverEveryValueOnce(t *testing.T) {
	merges := map[string]func(...<-chan int) <-chan int{
		"canonical": MergeCanonical[int], "reflect": MergeReflect[int],
		"batch": MergeBatch[int], "loop": MergeLoop[int],
	}
	for name, merge := range merges {
		for _, n := range []int{1, 2, 3, 4, 5, 9} {
			t.Run(fmt.Sprintf("%s/sources=%d", name, n), func(t *testing.T) {
				ins := make([]<-chan int, n)
				want := 0
				for i := range ins {
					ch := make(chan int, 10)
					for k := range 10 {
						ch <- i*100 + k
						want += i*100 + k
					}
					close(ch)
					ins[i] = ch
				}
				got, count := 0, 0
				for v := range merge(ins...) {
					got += v
					count++
				}
				if count != 10*n || got != want {
					t.Fatalf("got %d values summing to %d, want %d summing to %d", count, got, 10*n, want)
				}
			})
		}
	}
}

func TestSeedSumsAgree(t *testing.T) {
	xs := make([]int, 1000)
	for i := range xs {
		xs[i] = i * 7
	}
	want := FindSum(xs)
	if got := FindSumConc(xs); got != want {
		t.Fatalf("FindSumConc: got %d, want %d", got, want)
	}
	for _, n := range []int{1, 2, 3, 7} {
		if got := FindSumSplit(n, xs); got != want {
			t.Fatalf("FindSumSplit(%d): got %d, want %d", n, got, want)
		}
	}
}

func TestSeedElasticKeepsOrderAndCloses(t *testing.T) {
	for name, e := range map[string]ElasticChan[int]{
		"128":  NewElasticChan[int](ElasticShrinkNever),
		"4096": NewElasticChan4096[int](ElasticShrinkQuarter),
	} {
		const n = 3 * ElasticBigBuffer
		go func() {
			for i := range n {
				e.S <- i
			}
			close(e.S)
		}()
		next := 0
		for v := range e.R {
			if v != next {
				t.Fatalf("%s: got %d, want %d", name, v, next)
			}
			next++
		}
		if next != n {
			t.Fatalf("%s: got %d values, want %d", name, next, n)
		}
	}
}

func TestSeedRingPassesValuesInOrder(t *testing.T) {
	r := NewRingBuffer[int](64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 10_000 {
			r.Write(i)
		}
	}()
	for i := range 10_000 {
		if v := r.Read(); v != i {
			t.Fatalf("got %d, want %d", v, i)
		}
	}
	<-done
}

// A writer that keeps the input full makes the relay receive more than
// ElasticMaxReceive values in a row; none may be lost (the seed's own loop
// lost one there).
func TestSeedElasticLosesNothingAfterManyReceivesInARow(t *testing.T) {
	const n = 5 * ElasticMaxReceive
	in := make(chan int, n)
	for i := range n {
		in <- i
	}
	close(in)
	out := make(chan int)
	go elasticRun1(ElasticShrinkNever, out, in)
	next := 0
	for v := range out {
		if v != next {
			t.Fatalf("got %d, want %d", v, next)
		}
		next++
	}
	if next != n {
		t.Fatalf("got %d values, want %d", next, n)
	}
}
