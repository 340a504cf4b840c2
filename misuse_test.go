package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

func TestMisusePanicsWithAClearMessage(t *testing.T) {
	ctx := context.Background()
	id := func(_ context.Context, v int) (int, error) { return v, nil }
	cases := []struct {
		name  string
		build func(p *sluice.Pipeline)
		parts []string
	}{
		{"zero workers", func(p *sluice.Pipeline) {
			sluice.Map(p, "m", sluice.FromSlice(p, "s", ints(1)), 0, id)
		}, []string{"sluice", `Map "m"`, "workers must be ≥ 1, got 0"}},
		{"negative workers", func(p *sluice.Pipeline) {
			sluice.ForEach(p, "f", sluice.FromSlice(p, "s", ints(1)), -2, func(context.Context, int) error { return nil })
		}, []string{`ForEach "f"`, "got -2"}},
		{"nil function", func(p *sluice.Pipeline) {
			sluice.OrderedMap[int, int](p, "om", sluice.FromSlice(p, "s", ints(1)), 1, nil)
		}, []string{`OrderedMap "om"`, "nil function"}},
		{"batch size", func(p *sluice.Pipeline) {
			sluice.Batch(p, "b", sluice.FromSlice(p, "s", ints(1)), 0, time.Second)
		}, []string{`Batch "b"`, "size must be ≥ 1, got 0"}},
		{"window", func(p *sluice.Pipeline) {
			sluice.OrderedMap(p, "om", sluice.FromSlice(p, "s", ints(1)), 1, id, sluice.Reorder(0))
		}, []string{"Reorder must be ≥ 1, got 0"}},
		{"gather", func(p *sluice.Pipeline) {
			sluice.ForEachChunk(p, "bulk", sluice.FromSlice(p, "s", ints(1)), 1, func(context.Context, []int) error { return nil }, sluice.Gather(0))
		}, []string{"sluice", "Gather must be ≥ 1, got 0"}},
		{"buffer", func(p *sluice.Pipeline) {
			sluice.FromSlice(p, "s", ints(1), sluice.Buffer(-1))
		}, []string{"Buffer must be ≥ 1, got -1"}},
		{"huge buffer", func(p *sluice.Pipeline) {
			sluice.FromSlice(p, "s", ints(1), sluice.Buffer(math.MaxInt))
		}, []string{"sluice", `stage "s"`, fmt.Sprintf("Buffer(%d)", math.MaxInt)}},
		{"huge chunk", func(p *sluice.Pipeline) {
			sluice.FromSlice(p, "s", ints(1), sluice.Chunk(math.MaxInt))
		}, []string{"sluice", `stage "s"`, fmt.Sprintf("Chunk(%d)", math.MaxInt)}},
		{"consumed twice", func(p *sluice.Pipeline) {
			s := sluice.FromSlice(p, "s", ints(1))
			sluice.Map(p, "first", s, 1, id)
			sluice.Map(p, "second", s, 1, id)
		}, []string{`stage "second"`, `stream from stage "s" is already consumed by stage "first"`}},
		{"other pipeline", func(p *sluice.Pipeline) {
			other := sluice.New(ctx, sluice.Named("other"))
			s := sluice.FromSlice(other, "s", ints(1))
			defer func() { sluice.Collect(other, "drain", s); other.Wait() }()
			sluice.Map(p, "m", s, 1, id)
		}, []string{`stage "m"`, `belongs to pipeline "other"`}},
		{"zero stream", func(p *sluice.Pipeline) {
			sluice.Collect(p, "c", sluice.Stream[int]{})
		}, []string{`stage "c"`, "zero Stream"}},
		{"empty name", func(p *sluice.Pipeline) {
			sluice.FromSlice(p, "", ints(1))
		}, []string{"stage name must not be empty"}},
		{"duplicate name", func(p *sluice.Pipeline) {
			sluice.Collect(p, "same", sluice.FromSlice(p, "s", ints(1)))
			sluice.FromSlice(p, "same", ints(1))
		}, []string{`stage name "same" is already used`}},
		{"chunk on a sink", func(p *sluice.Pipeline) {
			sluice.ForEachChunk(p, "bulk", sluice.FromSlice(p, "s", ints(1)), 1, func(context.Context, []int) error { return nil }, sluice.Chunk(100))
		}, []string{"sluice", `ForEachChunk "bulk"`, "Chunk", "feeds"}},
		{"overflow on a sink", func(p *sluice.Pipeline) {
			sluice.ForEach(p, "each", sluice.FromSlice(p, "s", ints(1)), 1, func(context.Context, int) error { return nil }, sluice.OnFull(sluice.DropNewest))
		}, []string{"sluice", `ForEach "each"`, "OnFull"}},
		{"window on Map", func(p *sluice.Pipeline) {
			sluice.Map(p, "m", sluice.FromSlice(p, "s", ints(1)), 4, id, sluice.Reorder(8))
		}, []string{"sluice", `Map "m"`, "Reorder(8)", "only to OrderedMap"}},
		{"gather on Map", func(p *sluice.Pipeline) {
			sluice.Map(p, "m", sluice.FromSlice(p, "s", ints(1)), 4, id, sluice.Gather(8))
		}, []string{"sluice", `Map "m"`, "Gather(8)", "only to ForEachChunk"}},
		{"gather on ForEach", func(p *sluice.Pipeline) {
			sluice.ForEach(p, "each", sluice.FromSlice(p, "s", ints(1)), 1, func(context.Context, int) error { return nil }, sluice.Gather(8))
		}, []string{"sluice", `ForEach "each"`, "Gather(8)", "only to ForEachChunk"}},
		{"gather on OrderedMap", func(p *sluice.Pipeline) {
			sluice.OrderedMap(p, "om", sluice.FromSlice(p, "s", ints(1)), 1, id, sluice.Gather(8))
		}, []string{"sluice", `OrderedMap "om"`, "Gather(8)"}},
		{"window on a source", func(p *sluice.Pipeline) {
			sluice.FromSlice(p, "s", ints(1), sluice.Reorder(8))
		}, []string{"sluice", `"s"`, "Reorder(8)"}},
		{"nil stage option", func(p *sluice.Pipeline) {
			sluice.Map(p, "m", sluice.FromSlice(p, "s", ints(1)), 1, id, sluice.Chunk(4), nil)
		}, []string{"sluice", `Map "m"`, "StageOption 1 is nil"}},
		{"nil batch option", func(p *sluice.Pipeline) {
			sluice.Batch(p, "b", sluice.FromSlice(p, "s", ints(1)), 10, time.Second, nil)
		}, []string{"sluice", `Batch "b"`, "StageOption 0 is nil"}},
		{"nil pipeline option", func(*sluice.Pipeline) {
			sluice.New(ctx, sluice.Named("x"), nil)
		}, []string{"sluice: New", "Option 1 is nil"}},
		{"partition count", func(p *sluice.Pipeline) {
			sluice.Partition(p, "part", sluice.FromSlice(p, "s", ints(1)), 0, func(v int) int { return v })
		}, []string{`Partition "part"`, "n must be ≥ 1, got 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := sluice.New(ctx)
			mustPanic(t, func() { tc.build(p) }, tc.parts...)
			cancelAndDrain(p)
		})
	}
}

// cancelAndDrain ends a half-built pipeline: it consumes whatever streams
// were left dangling by cancelling and absorbing Wait's panic about them.
func cancelAndDrain(p *sluice.Pipeline) {
	defer func() { recover() }()
	p.Wait()
}

func TestWaitPanicsOnAStreamNobodyConsumes(t *testing.T) {
	p := sluice.New(context.Background())
	sluice.FromSlice(p, "orphan", ints(100_000))
	mustPanic(t, func() { p.Wait() }, `stream "orphan"`, "never consumed")
}

// A dead-letter stream left unconsumed is named as such: the stage's
// output was consumed, so a message naming only the stage would point at
// the wrong stream.
func TestWaitPanicNamesAnUnconsumedDeadLetterStream(t *testing.T) {
	p := sluice.New(context.Background())
	var dead sluice.Stream[sluice.Failed[int]]
	m := sluice.Map(p, "m", sluice.FromSlice(p, "s", ints(10)), 1, double, sluice.DeadLetter(&dead))
	sluice.Collect(p, "c", m)
	mustPanic(t, func() { p.Wait() }, `dead-letter stream of stage "m"`, "never consumed")
}

func TestAddingAStageAfterWaitPanics(t *testing.T) {
	p := sluice.New(context.Background())
	sluice.Collect(p, "c", sluice.FromSlice(p, "s", ints(3)))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	mustPanic(t, func() { sluice.FromSlice(p, "late", ints(1)) }, `stage "late"`, "after Wait")
}

// An Emitter kept past its generator's return must not swallow items: every
// method panics, naming the stage.
func TestEmitterUsedAfterItsGeneratorReturnedPanics(t *testing.T) {
	for _, use := range []struct {
		name string
		f    func(*sluice.Emitter[int])
	}{
		{"Send", func(e *sluice.Emitter[int]) { e.Send(1) }},
		{"Send twice", func(e *sluice.Emitter[int]) {
			func() { defer func() { recover() }(); e.Send(1) }()
			e.Send(2)
		}},
		{"Flush", func(e *sluice.Emitter[int]) { e.Flush() }},
		{"Await", func(e *sluice.Emitter[int]) { e.Await(func() {}) }},
	} {
		t.Run(use.name, func(t *testing.T) {
			p := sluice.New(context.Background())
			var kept *sluice.Emitter[int]
			src := sluice.From(p, "gen", func(_ context.Context, out *sluice.Emitter[int]) error {
				kept = out
				out.Send(7)
				return nil
			})
			got := sluice.Collect(p, "c", src)
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			mustPanic(t, func() { use.f(kept) }, "sluice", `From "gen"`, "after its generator returned")
			if v := got.Value(); len(v) != 1 || v[0] != 7 {
				t.Fatalf("got %v, want [7]", v)
			}
		})
	}
}

// A nil or zero *Pipeline is programmer error: every stage and method
// panics at once with a message naming it, instead of a nil dereference
// (or, for a zero Pipeline, a crash inside a stage's goroutine).
func TestMisuseOfANilOrZeroPipelinePanicsWithAClearMessage(t *testing.T) {
	for _, pc := range []struct {
		name string
		p    *sluice.Pipeline
	}{{"nil", nil}, {"zero", new(sluice.Pipeline)}} {
		uses := []struct {
			name  string
			use   func(p *sluice.Pipeline)
			parts []string
		}{
			{"FromSlice", func(p *sluice.Pipeline) { sluice.FromSlice(p, "src", ints(3)) }, []string{`"src"`}},
			{"From", func(p *sluice.Pipeline) {
				sluice.From(p, "gen", func(context.Context, *sluice.Emitter[int]) error { return nil })
			}, []string{`"gen"`}},
			{"Merge", func(p *sluice.Pipeline) { sluice.Merge(p, "m", []sluice.Stream[int]{{}}) }, []string{`"m"`}},
			{"Wait", func(p *sluice.Pipeline) { p.Wait() }, []string{"Wait"}},
			{"Drain", func(p *sluice.Pipeline) { p.Drain() }, []string{"Drain"}},
			{"DrainOn", func(p *sluice.Pipeline) { p.DrainOn(context.Background()) }, []string{"DrainOn"}},
			{"Stats", func(p *sluice.Pipeline) { p.Stats() }, []string{"Stats"}},
		}
		for _, u := range uses {
			t.Run(pc.name+"/"+u.name, func(t *testing.T) {
				mustPanic(t, func() { u.use(pc.p) }, append([]string{"sluice: ", "sluice.New"}, u.parts...)...)
			})
		}
	}
}

// Await(nil) in a generator fails the pipeline with a panic that says so,
// not a nil dereference.
func TestEmitterAwaitWithANilFunctionPanicsWithAClearMessage(t *testing.T) {
	p := sluice.New(context.Background())
	src := sluice.From(p, "gen", func(_ context.Context, out *sluice.Emitter[int]) error {
		out.Await(nil)
		return nil
	})
	sluice.Collect(p, "c", src)
	var pe *sluice.PanicError
	if err := p.Wait(); !errors.As(err, &pe) || pe.Value != `sluice: From "gen": Emitter.Await called with a nil function` {
		t.Fatalf("Wait returned %v, want a *PanicError saying Await got a nil function", err)
	}
}

// A Partition or Broadcast output left unconsumed is named by its index:
// every output comes from the same stage, so the stage's name alone does
// not say which one was forgotten.
func TestWaitPanicNamesTheUnconsumedOutputOfAFanOut(t *testing.T) {
	for _, kind := range []string{"Partition", "Broadcast"} {
		t.Run(kind, func(t *testing.T) {
			p := sluice.New(context.Background())
			src := sluice.FromSlice(p, "s", ints(100))
			var outs []sluice.Stream[int]
			if kind == "Partition" {
				outs = sluice.Partition(p, "split", src, 3, func(v int) int { return v })
			} else {
				outs = sluice.Broadcast(p, "split", src, 3)
			}
			sluice.Collect(p, "c0", outs[0])
			sluice.Collect(p, "c2", outs[2])
			mustPanic(t, func() { p.Wait() }, "sluice: ", `output 1 of stage "split"`, "never consumed")
		})
	}
}
