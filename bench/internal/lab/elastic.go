package lab

import (
	"context"
	"fmt"

	"github.com/eapache/channels"
	"github.com/smallnest/chanx"

	"github.com/sluicehq/sluice/internal/seeds"
)

// Seed 001: an elastic (unbounded) channel against plain channels. A round
// makes a fresh channel, sends the values 0 … n-1 and receives them,
// checking their order and that the channel then closes. "sequential"
// fills the channel completely before draining it (only unbounded channels,
// and a channel buffered to n, can do that); "concurrent" runs the producer
// and the consumer at the same time, as the seed's benchCon did.

// elasticVariant is one channel under test. ends makes a fresh channel
// whose send end closes when closeIn is called; run, when set, replaces the
// channel-ends pump (for APIs that are not a pair of channels).
type elasticVariant struct {
	name       string
	baseline   bool
	seq, conc  bool // which modes it runs in
	note       string
	ends       func(n int) (in chan<- int, out <-chan int)
	run        func(n int, seq bool) error
	seqSkipWhy string
}

func elasticVariants() []elasticVariant {
	const bounded = "a bounded channel cannot hold every value before the consumer starts"
	vs := []elasticVariant{
		{name: "chan unbuffered", conc: true, seqSkipWhy: bounded,
			ends: func(int) (chan<- int, <-chan int) { c := make(chan int); return c, c }},
		{name: "chan buffered 1024", conc: true, seqSkipWhy: bounded,
			ends: func(int) (chan<- int, <-chan int) { c := make(chan int, 1024); return c, c }},
		{name: "chan buffered n (pre-sized)", seq: true, conc: true,
			note: "knows n in advance: the lower bound for an unbounded channel",
			ends: func(n int) (chan<- int, <-chan int) { c := make(chan int, n); return c, c }},
		{name: "seed elastic (elasticRun1, never shrinks)", baseline: true, seq: true, conc: true,
			ends: func(int) (chan<- int, <-chan int) {
				e := seeds.NewElasticChan[int](seeds.ElasticShrinkNever)
				return e.S, e.R
			}},
		{name: "seed elastic, 4096-slot ends (elasticRun1, never shrinks)", seq: true, conc: true,
			note: "the seed's loop unchanged, ends 32× the seed's (issue 22)",
			ends: func(int) (chan<- int, <-chan int) {
				e := seeds.NewElasticChan4096[int](seeds.ElasticShrinkNever)
				return e.S, e.R
			}},
		{name: "smallnest/chanx UnboundedChan", seq: true, conc: true,
			ends: func(int) (chan<- int, <-chan int) {
				c := chanx.NewUnboundedChan[int](context.Background(), seeds.ElasticSendBuffer)
				return c.In, c.Out
			}},
		{name: "eapache InfiniteChannel", seq: true, conc: true,
			note: "values travel as interface{}",
			run:  eapacheInfinite},
	}
	return append(vs, sluiceElasticVariants()...)
}

func elasticExperiment() *Experiment {
	return &Experiment{
		Name: "elastic", Seed: "001", Unit: "value",
		Title: "elastic (unbounded) channels: one producer, one consumer, values checked in order",
		Cases: func(c *Config) []Case {
			var cases []Case
			for _, n := range c.sizes(pick(c.Mode, []int{100_000}, []int{50_000}, []int{1000})) {
				for _, mode := range []struct {
					name string
					seq  bool
				}{{"concurrent", false}, {"sequential (fill, then drain)", true}} {
					for _, v := range elasticVariants() {
						cs := Case{
							Group: fmt.Sprintf("%s, n=%s", mode.name, count(n)), Variant: v.name,
							Baseline: v.baseline, Items: n, Note: v.note,
						}
						switch {
						case mode.seq && !v.seq:
							cs.Skip = v.seqSkipWhy
						case !mode.seq && !v.conc:
							cs.Skip = "sequential only"
						}
						cs.Setup = func() (*Instance, error) {
							return &Instance{Round: func(Metrics) error { return elasticRound(v, n, mode.seq) }}, nil
						}
						cases = append(cases, cs)
					}
				}
			}
			return cases
		},
	}
}

func elasticRound(v elasticVariant, n int, seq bool) error {
	if v.run != nil {
		return v.run(n, seq)
	}
	in, out := v.ends(n)
	return pump(n, seq, in, func() { close(in) }, out, func(i int) int { return i }, func(v int) int { return v })
}

// pump sends 0 … n-1 on in, closes it, and receives from out checking
// order and the close: all of it first, then all of it (seq), or with the
// producer on its own goroutine.
func pump[T any](n int, seq bool, in chan<- T, closeIn func(), out <-chan T, box func(int) T, unbox func(T) int) error {
	produce := func() {
		for i := range n {
			in <- box(i)
		}
		closeIn()
	}
	if seq {
		produce()
		return drainRest(drainInOrder(n, out, unbox), out)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		produce()
	}()
	err := drainRest(drainInOrder(n, out, unbox), out)
	<-done
	return err
}

// drainRest, after a failed check, empties out on a goroutine of its own,
// so that the producer and the channel's own goroutine can finish.
func drainRest[T any](err error, out <-chan T) error {
	if err != nil {
		go func() {
			for range out {
			}
		}()
	}
	return err
}

func drainInOrder[T any](n int, out <-chan T, unbox func(T) int) error {
	for i := range n {
		v, ok := <-out
		if !ok {
			return fmt.Errorf("closed after %d of %d values (lost)", i, n)
		}
		if got := unbox(v); got != i {
			return fmt.Errorf("value %d is %d (out of order, lost or duplicated)", i, got)
		}
	}
	if v, ok := <-out; ok {
		return fmt.Errorf("extra value %d after all %d (duplicated)", unbox(v), n)
	}
	return nil
}

// eapacheInfinite runs a round on eapache/channels' InfiniteChannel, whose
// ends carry interface{}.
func eapacheInfinite(n int, seq bool) error {
	ch := channels.NewInfiniteChannel()
	return pump(n, seq, ch.In(), ch.Close, ch.Out(), func(i int) any { return i }, func(v any) int { return v.(int) })
}
