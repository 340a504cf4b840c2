package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
)

func ExampleFromSlice() {
	p := sluice.New(context.Background())
	got := sluice.Collect(p, "collect", sluice.FromSlice(p, "nums", []int{4, 5, 6}))
	if err := p.Wait(); err != nil {
		fmt.Println(err)
	}
	fmt.Println(got.Value())
	// Output: [4 5 6]
}

func ExampleNamed() {
	p := sluice.New(context.Background(), sluice.Named("ingest"))
	sluice.Collect(p, "collect", sluice.FromSlice(p, "nums", []int{1}))
	_ = p.Wait()
	fmt.Println(p.Name(), p.Stats().Pipeline)
	// Output: ingest ingest
}

func ExamplePipeline_Name() {
	named := sluice.New(context.Background(), sluice.Named("orders"))
	_ = named.Wait()
	fmt.Println(named.Name())
	// Output: orders
}

func ExamplePipeline_Context() {
	p := sluice.New(context.Background())
	sluice.ForEach(p, "fail", sluice.FromSlice(p, "nums", []int{1}), 1, func(context.Context, int) error {
		return errors.New("boom")
	})
	err := p.Wait()
	// The pipeline's context ends when a stage fails (and after Wait);
	// code outside the stages can watch it.
	<-p.Context().Done()
	fmt.Println(err, "|", context.Cause(p.Context()) != nil)
	// Output: sluice: stage "fail": boom | true
}

func ExampleStream_Name() {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "orders", []int{1, 2})
	doubled := sluice.Map(p, "double", src, 1, double)
	fmt.Println(src.Name(), doubled.Name())
	sluice.Collect(p, "collect", doubled)
	_ = p.Wait()
	// Output: orders double
}

func ExampleResult_Value() {
	p := sluice.New(context.Background())
	count := sluice.Reduce(p, "count", sluice.FromSlice(p, "words", strings.Fields("a b c d")), 0,
		func(n int, _ string) int { return n + 1 })
	if err := p.Wait(); err != nil {
		fmt.Println(err)
	}
	fmt.Println(count.Value()) // read it after Wait
	// Output: 4
}

func ExampleBuffer() {
	p := sluice.New(context.Background())
	// An output edge of one item: the source hands items over one at a time.
	src := sluice.FromSlice(p, "nums", []int{1, 2, 3}, sluice.Buffer(1))
	got := sluice.Collect(p, "collect", src)
	_ = p.Wait()
	e := p.Stats().Edges[0]
	fmt.Println(got.Value(), e.Capacity, e.ChunkSize)
	// Output: [1 2 3] 1 1
}

func ExampleChunk() {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "rows", ints(100), sluice.Chunk(10))
	largest := 0
	sluice.ForEachChunk(p, "insert", src, 1, func(_ context.Context, rows []int) error {
		largest = max(largest, len(rows))
		return nil
	})
	_ = p.Wait()
	fmt.Println(largest, p.Stats().Edges[0].ChunkSize)
	// Output: 10 10
}

func ExampleGather() {
	p := sluice.New(context.Background())
	src := sluice.FromSlice(p, "rows", ints(10_000), sluice.Chunk(100))
	var calls, rows, largest int
	sluice.ForEachChunk(p, "insert", src, 1, func(_ context.Context, batch []int) error {
		time.Sleep(time.Millisecond) // a bulk write's round trip: chunks queue meanwhile
		calls++
		rows += len(batch)
		largest = max(largest, len(batch))
		return nil
	}, sluice.Gather(1000))
	_ = p.Wait()
	// Each call took every chunk waiting, up to 1000 rows: fewer calls
	// than the 100 chunks, none larger than 1000.
	fmt.Println(rows, calls < 100, largest <= 1000)
	// Output: 10000 true true
}

func ExampleReorder() {
	p := sluice.New(context.Background())
	slowFirst := func(_ context.Context, v int) (int, error) {
		if v == 0 {
			time.Sleep(10 * time.Millisecond) // later items finish first
		}
		return v * 10, nil
	}
	// At most 8 items between taking and handing on: the others wait for
	// the slow first item instead of piling up behind it.
	out := sluice.OrderedMap(p, "scale", sluice.FromSlice(p, "nums", ints(20)), 4, slowFirst, sluice.Reorder(8))
	got := sluice.Collect(p, "collect", out)
	_ = p.Wait()
	fmt.Println(got.Value()[:5])
	// Output: [0 10 20 30 40]
}

func ExampleOverflow_String() {
	fmt.Println(sluice.Block, sluice.DropNewest, sluice.DropOldest)
	// Output: block drop-newest drop-oldest
}

func ExampleIsPermanent() {
	err := fmt.Errorf("order 7: %w", sluice.Permanent(errors.New("no such account")))
	fmt.Println(sluice.IsPermanent(err), sluice.IsPermanent(errors.New("timeout")))
	// Output: true false
}

func ExampleStageError_Error() {
	p := sluice.New(context.Background())
	sluice.ForEach(p, "store", sluice.FromSlice(p, "nums", []int{1}), 1, func(context.Context, int) error {
		return errors.New("disk full")
	})
	err := p.Wait()
	fmt.Println(err.Error())
	// Output: sluice: stage "store": disk full
}

func ExampleStageError_Unwrap() {
	errDiskFull := errors.New("disk full")
	p := sluice.New(context.Background())
	sluice.ForEach(p, "store", sluice.FromSlice(p, "nums", []int{1}), 1, func(context.Context, int) error {
		return errDiskFull
	})
	err := p.Wait()
	var se *sluice.StageError
	fmt.Println(errors.As(err, &se), se.Stage, errors.Is(err, errDiskFull))
	// Output: true store true
}

func ExamplePanicError_Error() {
	p := sluice.New(context.Background())
	sluice.ForEach(p, "risky", sluice.FromSlice(p, "nums", []int{1}), 1, func(context.Context, int) error {
		panic("index out of range")
	})
	err := p.Wait()
	var pe *sluice.PanicError
	fmt.Println(errors.As(err, &pe), pe.Stage, pe.Value, strings.Contains(pe.Error(), "index out of range"), len(pe.Stack) > 0)
	// Output: true risky index out of range true true
}

func ExamplePanicError_Unwrap() {
	errBroken := errors.New("broken invariant")
	p := sluice.New(context.Background())
	sluice.ForEach(p, "risky", sluice.FromSlice(p, "nums", []int{1}), 1, func(context.Context, int) error {
		panic(errBroken) // a panic value that is an error is unwrapped
	})
	err := p.Wait()
	fmt.Println(errors.Is(err, errBroken))
	// Output: true
}

func ExampleItemErrors_Error() {
	errs := sluice.ItemErrors{nil, errors.New("row 2: bad date"), nil}
	fmt.Println(errs.Error() != "", strings.Contains(errs.Error(), "row 2: bad date"))
	// Output: true true
}

func ExampleItemErrors_Unwrap() {
	errDup := errors.New("duplicate key")
	var err error = sluice.ItemErrors{nil, fmt.Errorf("row 2: %w", errDup), nil}
	fmt.Println(errors.Is(err, errDup), err.(sluice.ItemErrors).Unwrap()) // the items' errors, not the nils
	// Output: true [row 2: duplicate key]
}

func ExampleEmitter_Send() {
	p := sluice.New(context.Background())
	src := sluice.From(p, "lines", func(ctx context.Context, out *sluice.Emitter[string]) error {
		for i := range 3 {
			if !out.Send("line " + strconv.Itoa(i)) { // false: stop, the pipeline stopped or drains
				return ctx.Err()
			}
		}
		return nil
	})
	got := sluice.Collect(p, "collect", src)
	_ = p.Wait()
	fmt.Println(got.Value())
	// Output: [line 0 line 1 line 2]
}

func ExampleEmitter_Flush() {
	ticks := make(chan int)
	p := sluice.New(context.Background())
	src := sluice.From(p, "ticks", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := range 3 {
			out.Send(i)
			out.Flush() // hand it on now: the next tick may be far off
			select {
			case ticks <- i:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		close(ticks)
		return nil
	})
	var mu sync.Mutex
	var seen []int
	sluice.ForEach(p, "print", src, 1, func(_ context.Context, v int) error {
		mu.Lock()
		seen = append(seen, v)
		mu.Unlock()
		return nil
	})
	for i := range ticks {
		// Flushed: item i reaches the sink before the generator sends i+1.
		for {
			mu.Lock()
			n := len(seen)
			mu.Unlock()
			if n > i {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	_ = p.Wait()
	fmt.Println(seen)
	// Output: [0 1 2]
}

func ExampleEmitter_Done() {
	feed := make(chan int) // a feed that never ends
	p := sluice.New(context.Background())
	src := sluice.From(p, "feed", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for {
			select {
			case v := <-feed:
				out.Send(v)
			case <-out.Done(): // a drain: take nothing more
				return nil
			}
		}
	})
	n := sluice.Reduce(p, "count", src, 0, func(n, _ int) int { return n + 1 })
	p.Drain()
	fmt.Println(p.Wait(), n.Value())
	// Output: <nil> 0
}

func ExampleHistogram_Quantile() {
	h := sluice.Histogram{
		Bounds: []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 0},
		Counts: []uint64{90, 8, 2, 0},
		Count:  100,
	}
	fmt.Println(h.Quantile(0.5) <= time.Millisecond, h.Quantile(0.99) > 2*time.Millisecond)
	// Output: true true
}

// settleLog is a Settler that records how each message was settled.
type settleLog struct {
	mu  sync.Mutex
	got []string
}

func (r *settleLog) Settle(key uint64, cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, fmt.Sprintf("%d:%v", key, cause))
}

func ExampleNewReceipt() {
	var rec settleLog // a connector's Settler: it hears once per message
	r := sluice.NewReceipt(&rec, 42)
	r.Ack()
	r.Ack() // settles once: does nothing
	fmt.Println(rec.got)
	// Output: [42:<nil>]
}

func ExampleReceipt_Ack() {
	var rec settleLog
	type row struct {
		sluice.Receipt
		v int
	}
	in := []row{{sluice.NewReceipt(&rec, 1), 10}, {sluice.NewReceipt(&rec, 2), 20}}
	p := sluice.New(context.Background())
	// Collect hands items to the caller, who settles them once stored.
	got := sluice.Collect(p, "collect", sluice.FromSlice(p, "rows", in))
	_ = p.Wait()
	for _, r := range got.Value() {
		r.Ack()
	}
	fmt.Println(rec.got)
	// Output: [1:<nil> 2:<nil>]
}

func ExampleReceipt_Fail() {
	var rec settleLog
	r := sluice.NewReceipt(&rec, 7)
	r.Fail(errors.New("malformed"))
	r.Ack() // after Fail: does nothing
	fmt.Println(rec.got)
	// Output: [7:malformed]
}

func ExampleReceipt_Expect() {
	var rec settleLog
	r := sluice.NewReceipt(&rec, 3)
	r.Expect(2) // two results derive from the message; each settles it once stored
	r.Ack()
	fmt.Println(len(rec.got))
	r.Ack()
	fmt.Println(rec.got)
	// Output:
	// 0
	// [3:<nil>]
}

func ExampleReceipt_IsZero() {
	var none sluice.Receipt // an item that came from no broker
	fmt.Println(none.IsZero(), sluice.NewReceipt(&settleLog{}, 1).IsZero())
	none.Ack() // settles nothing
	// Output: true false
}

func ExampleReceipt_Origin() {
	type event struct {
		sluice.Receipt // embedding makes event a Carrier
		n              int
	}
	var rec settleLog
	var c sluice.Carrier = event{sluice.NewReceipt(&rec, 5), 1}
	c.Origin().Ack()
	fmt.Println(rec.got)
	// Output: [5:<nil>]
}
