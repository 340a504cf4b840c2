package kafkax_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// newSource creates a source closed when the test ends.
func newSource(t testing.TB, group string, topics []string, opts ...kafkax.SourceOption) *kafkax.Source {
	t.Helper()
	src, err := kafkax.NewSource(ctxT(t, 30*time.Second), broker, group, topics, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return src
}

// newSink creates a sink closed when the test ends.
func newSink(t testing.TB, opts ...kafkax.SinkOption) *kafkax.Sink {
	t.Helper()
	sink, err := kafkax.NewSink(ctxT(t, 30*time.Second), broker, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sink.Close)
	return sink
}

// copyOut is the stages' usual result: the value to out, keyed by itself.
func copyOut(m kafkax.Msg) kafkax.Out {
	return kafkax.Out{Key: m.Value(), Value: m.Value(), From: m.Receipt}
}

func TestPipelineCopiesEveryRecordAndCommitsToTheEnd(t *testing.T) {
	in, out := newTopic(t, 4), newTopic(t, 4)
	const n = 20000
	produceN(t, in, n)
	src := newSource(t, "copy", []string{in}, kafkax.StopWhenCaughtUp())
	sink := newSink(t, kafkax.ToTopic(out))

	p := sluice.New(ctxT(t, time.Minute))
	msgs := kafkax.Read(p, "read", src)
	outs := sluice.Map(p, "copy", msgs, 4, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		return copyOut(m), nil
	})
	kafkax.Produce(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	ids, _ := readAll(t, out)
	if dup := checkEvery(t, ids, n); dup != 0 {
		t.Fatalf("%d records stored twice in a run without failures", dup)
	}
	if l := lag(t, "copy", in); l != 0 {
		t.Fatalf("group lag after the run: %d; want 0", l)
	}
	t.Logf("source %+v, sink %+v", src.Stats(), sink.Stats())
}

// TestCommitsNeverPassAnUnsettledRecord settles records out of order (an
// unordered Map with random delays), checks while it runs that no committed
// offset is past a record the pipeline still holds, stops the run midway,
// and checks that a second run stores what the first left, missing nothing.
func TestCommitsNeverPassAnUnsettledRecord(t *testing.T) {
	in, out := newTopic(t, 3), newTopic(t, 3)
	const n, group = 6000, "ooo"
	produceN(t, in, n)
	prod, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ProducerLinger(0), kgo.DefaultProduceTopic(out))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	type key struct {
		part   int32
		offset int64
	}
	var mu sync.Mutex
	held := make(map[key]bool) // emitted and not yet settled
	adm := admin(t)
	checks := 0
	check := func() {
		committed, err := adm.FetchOffsets(context.Background(), group)
		if err != nil {
			return // no group yet
		}
		mu.Lock()
		defer mu.Unlock()
		checks++
		for k := range held {
			if c, ok := committed.Lookup(in, k.part); ok && c.At > k.offset {
				t.Errorf("partition %d committed at %d while offset %d is unsettled", k.part, c.At, k.offset)
			}
		}
	}

	run := func(stopAfter int64) kafkax.SourceStats {
		src := newSource(t, group, []string{in}, kafkax.CommitEvery(100*time.Millisecond), kafkax.StopWhenCaughtUp())
		ctx, cancel := context.WithCancel(ctxT(t, time.Minute))
		defer cancel()
		p := sluice.New(ctx)
		msgs := kafkax.Read(p, "read", src)
		sluice.ForEach(p, "shuffle", msgs, 16, func(ctx context.Context, m kafkax.Msg) error {
			mu.Lock()
			held[key{m.Partition(), m.Offset()}] = true
			mu.Unlock()
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			if err := prod.ProduceSync(ctx, &kgo.Record{Key: m.Value(), Value: m.Value()}).FirstErr(); err != nil {
				return err
			}
			// Forget it before settling it: a check in between then
			// misses a record rather than sees a settled one as held.
			mu.Lock()
			delete(held, key{m.Partition(), m.Offset()})
			mu.Unlock()
			m.Ack()
			return nil
		})
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Fatal(err)
				}
				// Leave the group: its revoke commits the settled prefix.
				if err := src.Close(); err != nil {
					t.Fatal(err)
				}
				check()
				mu.Lock()
				clear(held) // unsettled for good: the next run reads them again
				mu.Unlock()
				return src.Stats()
			case <-tick.C:
				check()
				if stopAfter > 0 && src.Stats().Acked >= stopAfter {
					cancel()
					stopAfter = 0
				}
			}
		}
	}
	first := run(n / 2)
	if first.Acked >= n {
		t.Fatalf("the first run settled all %d records before it was stopped", first.Acked)
	}
	second := run(0)
	ids, _ := readAll(t, out)
	dup := checkEvery(t, ids, n)
	if l := lag(t, group, in); l != 0 {
		t.Fatalf("group lag after the second run: %d; want 0", l)
	}
	t.Logf("%d checks; first run settled %d, second %d; %d stored twice", checks, first.Acked, second.Acked, dup)
	if checks < 10 {
		t.Fatalf("only %d checks of the committed offsets", checks)
	}
}

// TestASecondReadGetsWhatTheFirstFetchedButDidNotEmit: a pipeline that
// stops (here, drains) while the source is emitting a fetch leaves records
// that the client has consumed but the pipeline never saw. A later Read of
// the same Source must emit them: franz-go will not fetch them again, and
// the commits of their partition cannot pass them.
func TestASecondReadGetsWhatTheFirstFetchedButDidNotEmit(t *testing.T) {
	in := newTopic(t, 1)
	const n = 5000
	produceN(t, in, n)
	src := newSource(t, "reread", []string{in}, kafkax.StopWhenCaughtUp())
	seen := make(map[string]bool)
	read := func(drainAtOnce bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p := sluice.New(ctx)
		sluice.ForEach(p, "ack", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg) error {
			seen[string(m.Value())] = true
			m.Ack()
			if drainAtOnce {
				p.Drain()
			}
			return nil
		})
		return p.Wait()
	}
	if err := read(true); err != nil {
		t.Fatal(err)
	}
	first := len(seen)
	if err := read(false); err != nil {
		t.Fatalf("second read: %v (after the first saw %d of %d)", err, first, n)
	}
	if len(seen) != n {
		t.Fatalf("saw %d distinct records (%d in the first read); want %d", len(seen), first, n)
	}
	if l := lag(t, "reread", in); l != 0 {
		t.Fatalf("lag %d after both reads; want 0", l)
	}
}

// TestRecordsTheCoreDropsAreCommitted: records that a Filter drops or that
// SkipErrors skips are settled by the core, so their partitions' commits
// pass them and StopWhenCaughtUp stops with nothing left.
func TestRecordsTheCoreDropsAreCommitted(t *testing.T) {
	in, out := newTopic(t, 2), newTopic(t, 2)
	const n, group = 1000, "dropped"
	produceN(t, in, n)
	sink := newSink(t, kafkax.ToTopic(out))
	src := newSource(t, group, []string{in}, kafkax.StopWhenCaughtUp())
	p := sluice.New(ctxT(t, time.Minute))
	kept := sluice.Filter(p, "odd", kafkax.Read(p, "read", src), 2, func(_ context.Context, m kafkax.Msg) (bool, error) {
		return m.Offset()%2 == 1, nil
	})
	outs := sluice.Map(p, "copy", kept, 2, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		if m.Offset()%3 == 0 {
			return kafkax.Out{}, errors.New("skipped")
		}
		return copyOut(m), nil
	}, sluice.SkipErrors())
	kafkax.Produce(p, "write", outs, sink)
	if err := p.Wait(); err != nil {
		t.Fatalf("%v (source %+v, lag %d)", err, src.Stats(), lag(t, group, in))
	}
	if l := lag(t, group, in); l != 0 {
		t.Fatalf("lag %d; want 0", l)
	}
	if st := src.Stats(); st.Acked != n || st.InFlight != 0 {
		t.Fatalf("source %+v; want all %d acked", st, n)
	}
}
