package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
)

func ExampleLogger() {
	// A text handler without the time, so that the output is the same on
	// every run; in a service, slog.NewJSONHandler(os.Stderr, nil).
	drop := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey || a.Key == "elapsed" {
			return slog.Attr{}
		}
		return a
	}
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: drop}))
	p := sluice.New(context.Background(), sluice.Named("orders"), sluice.Logger(log))
	var dead sluice.Stream[sluice.Failed[int]]
	sluice.ForEach(p, "store", sluice.FromSlice(p, "in", []int{1, 2, 3}), 1, func(_ context.Context, v int) error {
		if v == 2 {
			return errors.New("rejected")
		}
		return nil
	}, sluice.DeadLetter(&dead))
	sluice.ForEach(p, "dead", dead, 1, func(context.Context, sluice.Failed[int]) error { return nil })
	_ = p.Wait()
	// Output:
	// level=WARN msg="items failed" pipeline=orders stage=store failed=1 error=rejected attempts=1
	// level=INFO msg="pipeline finished" pipeline=orders stages.in.in=0 stages.in.out=3 stages.store.in=3 stages.store.out=0 stages.store.failed=1 stages.store.dead_lettered=1 stages.dead.in=1 stages.dead.out=0
}

// printTracer is a Tracer that prints each span as it ends: traced says
// that it continues (or links) an item's trace.
type printTracer struct{ mu sync.Mutex }

func (t *printTracer) Start(ctx context.Context, c sluice.Call) (context.Context, func(error)) {
	traced := c.Parent != nil || len(c.Links) > 0
	return context.WithValue(ctx, traceKey{}, c.Stage), func(err error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		fmt.Printf("span %q (%s) items=%d traced=%v err=%v\n", c.Stage, c.Kind, c.Items, traced, err)
	}
}

func ExampleTracing() {
	p := sluice.New(context.Background(), sluice.Tracing(&printTracer{}))
	// One item, so that the output does not depend on how items were
	// chunked: a ForEachChunk's span counts the items of its call. The
	// source's span starts the item's trace; the others continue it.
	up := sluice.Map(p, "upper", sluice.FromSlice(p, "in", []string{"a"}), 1, func(_ context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil
	})
	sluice.ForEachChunk(p, "store", up, 1, func(context.Context, []string) error { return nil })
	_ = p.Wait()
	// Output:
	// span "in" (source) items=1 traced=false err=<nil>
	// span "upper" (map) items=1 traced=true err=<nil>
	// span "store" (for-each-chunk) items=1 traced=true err=<nil>
}

type traceKey struct{}

type tracedMsg struct {
	sluice.Receipt
	body string
}

func ExampleReceipt_WithTrace() {
	// A connector's source extracts the message's trace context from its
	// headers (with a Propagator) and attaches it to the receipt; every
	// stage's span then continues that trace (see Tracing).
	trace := context.WithValue(context.Background(), traceKey{}, "trace 4bf92f35")
	m := tracedMsg{sluice.NewReceipt(printSettler{}, 1).WithTrace(trace), "hello"}
	p := sluice.New(context.Background(), sluice.Tracing(&printTracer{}))
	sluice.ForEach(p, "store", sluice.FromSlice(p, "in", []tracedMsg{m}), 1, func(context.Context, tracedMsg) error { return nil })
	_ = p.Wait()
	fmt.Println(m.Trace().Value(traceKey{}))
	// Output:
	// span "store" (for-each) items=1 traced=true err=<nil>
	// settled 1 <nil>
	// trace 4bf92f35
}

func ExampleReceipt_Trace() {
	var none sluice.Receipt
	r := sluice.NewReceipt(printSettler{}, 7)
	fmt.Println(none.Trace() == nil, r.Trace() == nil)
	r.WithTrace(context.Background())
	fmt.Println(r.Trace() != nil)
	// Output:
	// true true
	// true
}

func ExamplePanicError_Format() {
	p := sluice.New(context.Background())
	sluice.ForEach(p, "risky", sluice.FromSlice(p, "nums", []int{1}), 1, func(context.Context, int) error {
		panic("boom")
	})
	err := p.Wait()
	var pe *sluice.PanicError
	errors.As(err, &pe)
	line := fmt.Sprintf("%v", pe)
	full := fmt.Sprintf("%+v", pe)
	fmt.Println(strings.Count(line, "\n"), strings.HasPrefix(full, line+"\n"), strings.Contains(full, "goroutine"))
	// Output: 0 true true
}

func ExampleTally() {
	// A text handler without the time, so that the output is the same on
	// every run.
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: noTime}))
	acks := &sluice.Tally{Logger: log, Level: slog.LevelWarn, Msg: "acks failed",
		Attrs: []slog.Attr{slog.String("stream", "orders")}}
	for i := range 1000 {
		acks.Add(1, slog.Int("seq", i)) // the first is written at once
	}
	acks.Flush() // the rest, in one line
	// Output:
	// level=WARN msg="acks failed" stream=orders count=1 seq=0
	// level=WARN msg="acks failed" stream=orders count=999 seq=999
}

func ExampleLogDuration() {
	log := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	log.Info("drain begun", sluice.LogDuration("grace", 5*time.Second), slog.Duration("as_slog_writes_it", 5*time.Second))
	// Output:
	// {"level":"INFO","msg":"drain begun","grace":"5s","as_slog_writes_it":5000000000}
}

func ExampleSnapshot_Stage() {
	p := sluice.New(context.Background())
	batches := sluice.Batch(p, "batch", sluice.FromSlice(p, "in", make([]int, 250)), 100, time.Second)
	sluice.ForEach(p, "store", batches, 1, func(context.Context, []int) error { return nil })
	_ = p.Wait()
	store, _ := p.Stats().Stage("store")
	fmt.Printf("batches %d, items %d\n", store.In, store.InItems)
	// Output:
	// batches 3, items 250
}

// topicSettler is a connector's Settler that describes its messages.
type topicSettler struct{}

func (topicSettler) Settle(uint64, error) {}
func (topicSettler) Describe(key uint64) (sluice.Message, bool) {
	return sluice.Message{System: "kafka", Destination: "orders", Partition: fmt.Sprint(key % 3)}, true
}

func ExampleReceipt_Message() {
	r := sluice.NewReceipt(topicSettler{}, 7)
	m, ok := r.Message()
	fmt.Println(m.System, m.Destination, m.Partition, ok)
	var none sluice.Receipt
	_, ok = none.Message()
	fmt.Println(ok)
	// Output:
	// kafka orders 1 true
	// false
}
