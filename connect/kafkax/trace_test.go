package kafkax_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// sourceTracer records each span's call; a source's span has the trace
// "source:<n>", n counting them.
type sourceTracer struct {
	mu    sync.Mutex
	calls []sluice.Call
	roots int
}

func (s *sourceTracer) Start(ctx context.Context, c sluice.Call) (context.Context, func(error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Kind == "source" {
		s.roots++
		ctx = context.WithValue(ctx, traceKey{}, s.roots)
	}
	if c.Parent != nil {
		c.Parent = context.WithValue(context.Background(), traceKey{}, c.Parent.Value(traceKey{}))
	}
	s.calls = append(s.calls, c)
	return ctx, func(error) {}
}

// Without Propagate, a traced pipeline still has one trace per record:
// the Read stage's span begins it, each later span continues it, and
// every span describes the record (kafka, its topic and partition).
func TestEachRecordIsOneTraceBegunByItsSource(t *testing.T) {
	in := newTopic(t, 2)
	const n = 20
	produceN(t, in, n)
	src := newSource(t, "traced", []string{in}, kafkax.StopWhenCaughtUp())
	var tr sourceTracer
	p := sluice.New(ctxT(t, time.Minute), sluice.Tracing(&tr))
	sluice.ForEach(p, "store", kafkax.Read(p, "read", src), 2, func(context.Context, kafkax.Msg) error { return nil })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	parents := map[any]int{}
	var roots int
	for _, c := range tr.calls {
		if c.Message.System != "kafka" || c.Message.Destination != in || (c.Message.Partition != "0" && c.Message.Partition != "1") {
			t.Fatalf("span %s %s: got message %+v, want kafka, topic %s, its partition", c.Stage, c.Kind, c.Message, in)
		}
		switch c.Stage {
		case "read":
			roots++
		case "store":
			if c.Parent == nil {
				t.Fatalf("a store span has no parent, want its record's source span")
			}
			parents[c.Parent.Value(traceKey{})]++
		}
	}
	if roots != n || len(parents) != n {
		t.Fatalf("got %d source spans and store spans under %d of them, want %d and %d", roots, len(parents), n, n)
	}
	for root, k := range parents {
		if k != 1 {
			t.Fatalf("source span %v has %d store spans, want 1", root, k)
		}
	}
}
