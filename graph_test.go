package sluice_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// panicsWithin runs f and returns its panic message; it fails the test if
// f does not panic, or has not returned within 10 s (the hang the check
// exists to prevent).
func panicsWithin(t *testing.T, f func()) string {
	t.Helper()
	got := make(chan any, 1)
	go func() {
		defer func() { got <- recover() }()
		f()
	}()
	select {
	case r := <-got:
		msg, _ := r.(string)
		if r == nil || msg == "" {
			t.Fatalf("got panic value %v, want a message", r)
		}
		return msg
	case <-time.After(10 * time.Second):
		t.Fatal("still waiting after 10 s: the read hangs")
	}
	return ""
}

func failsOn7(_ context.Context, v int) (int, error) {
	if v%1000 == 7 {
		return 0, errors.New("seven")
	}
	return v, nil
}

// TestValueBeforeEveryStreamHasAConsumerPanicsNamingIt waits on a Reduce
// while the dead-letter stream of a stage above it has no consumer yet.
func TestValueBeforeEveryStreamHasAConsumerPanicsNamingIt(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("etl"))
	var dead sluice.Stream[sluice.Failed[int]]
	m := sluice.Map(p, "parse", sluice.FromSlice(p, "src", ints(10_000)), 2, failsOn7, sluice.DeadLetter(&dead))
	total := sluice.Reduce(p, "sum", m, 0, func(a, v int) int { return a + v })
	msg := panicsWithin(t, func() { total.Value() })
	for _, want := range []string{`pipeline "etl"`, `Value of reduce "sum"`, `dead-letter stream of stage "parse"`, "no consumer"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("got panic %q, want it to mention %q", msg, want)
		}
	}
}

// TestToSeqLoopBeforeEveryStreamHasAConsumerPanicsNamingIt begins a ToSeq
// loop before the dead-letter consumer is built.
func TestToSeqLoopBeforeEveryStreamHasAConsumerPanicsNamingIt(t *testing.T) {
	p := sluice.New(context.Background())
	var dead sluice.Stream[sluice.Failed[int]]
	m := sluice.Map(p, "parse", sluice.FromSlice(p, "src", ints(9_900)), 2, failsOn7, sluice.DeadLetter(&dead))
	seq := sluice.ToSeq(p, "out", m)
	msg := panicsWithin(t, func() {
		for range seq {
		}
	})
	if want := `dead-letter stream of stage "parse"`; !strings.Contains(msg, want) {
		t.Fatalf("got panic %q, want it to mention %q", msg, want)
	}
}

// TestRangingOverOneBroadcastOutputBeforeTheOtherHasAConsumerPanics reads
// output 0 of a Broadcast while output 1 has no consumer.
func TestRangingOverOneBroadcastOutputBeforeTheOtherHasAConsumerPanics(t *testing.T) {
	p := sluice.New(context.Background())
	outs := sluice.Broadcast(p, "copy", sluice.FromSlice(p, "src", ints(10_000)), 2)
	seq := sluice.ToSeq(p, "first", outs[0])
	msg := panicsWithin(t, func() {
		for range seq {
		}
	})
	if want := `output 1 of stage "copy"`; !strings.Contains(msg, want) {
		t.Fatalf("got panic %q, want it to mention %q", msg, want)
	}
}

// TestReadsWaitNormallyOnceTheGraphIsComplete checks the check does not
// refuse a correct program: every consumer built, then the reads, and a
// stream without a consumer that is not upstream of the read.
func TestReadsWaitNormallyOnceTheGraphIsComplete(t *testing.T) {
	p := sluice.New(context.Background())
	var dead sluice.Stream[sluice.Failed[int]]
	m := sluice.Map(p, "parse", sluice.FromSlice(p, "src", ints(10_000)), 2, failsOn7, sluice.DeadLetter(&dead))
	total := sluice.Reduce(p, "sum", m, 0, func(a, v int) int { return a + v })
	deadCount := sluice.Reduce(p, "dlq", dead, 0, func(a int, _ sluice.Failed[int]) int { return a + 1 })
	other := sluice.FromSlice(p, "other", ints(3))
	if got := deadCount.Value(); got != 10 {
		t.Fatalf("got %d dead letters, want 10", got)
	}
	_ = total.Value()
	sluice.Collect(p, "late", other) // built after the reads: not upstream of them
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestPipelinesWithDefaultNamesAreToldApart checks two unnamed pipelines'
// names differ, so that a message naming one cannot be read as the other.
func TestPipelinesWithDefaultNamesAreToldApart(t *testing.T) {
	a, b := sluice.New(context.Background()), sluice.New(context.Background())
	if a.Name() == b.Name() {
		t.Fatalf("got two pipelines both named %q", a.Name())
	}
	src := sluice.FromSlice(a, "src", ints(1))
	msg := panicsWithin(t, func() { sluice.Collect(b, "c", src) })
	if !strings.Contains(msg, a.Name()) || !strings.Contains(msg, b.Name()) {
		t.Fatalf("got panic %q, want it to name both %q and %q", msg, a.Name(), b.Name())
	}
	sluice.Collect(a, "c", src)
	if err := a.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(); err == nil {
		t.Fatal("got nil from the pipeline whose stage's construction panicked, want the error that says so")
	}
}
