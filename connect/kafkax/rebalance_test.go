package kafkax_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// TestRevokeCommitsTheSettledPrefixBeforeThePartitionMoves runs member A
// alone, slowly, with periodic commits off, then lets member B join the
// group: the rebalance moves partitions from A to B. B starts where A's
// revoke commit left them, so the records processed twice are at most the
// ones A held unsettled then (MaxInFlight); without that commit B would
// start from the beginning and redo everything A had done.
func TestRevokeCommitsTheSettledPrefixBeforeThePartitionMoves(t *testing.T) {
	in, out := newTopic(t, 4), newTopic(t, 4)
	const n, bound, group = 8000, 200, "revoke"
	// Small record batches, so that each fetch brings a few records of
	// every partition and A works on all of them from the start.
	produceN(t, in, n, kgo.ProducerBatchMaxBytes(512))
	sink := newSink(t, kafkax.ToTopic(out))

	var mu sync.Mutex
	perPart := make(map[int32]int) // records A's stage has processed, by partition
	ctx, cancel := context.WithCancel(ctxT(t, 2*time.Minute))
	defer cancel()
	member := func(isA bool, delay time.Duration) (*kafkax.Source, chan error) {
		src := newSource(t, group, []string{in}, kafkax.MaxInFlight(bound), kafkax.CommitEvery(time.Hour),
			kafkax.WithClient(kgo.FetchMaxPartitionBytes(2048)))
		p := sluice.New(ctx)
		outs := sluice.Map(p, "work", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
			time.Sleep(delay)
			if isA {
				mu.Lock()
				perPart[m.Partition()]++
				mu.Unlock()
			}
			return copyOut(m), nil
		})
		kafkax.Produce(p, "write", outs, sink)
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		return src, done
	}
	a, aDone := member(true, 300*time.Microsecond)
	// Every partition has records settled by A before B comes, whichever
	// partitions move.
	eventually(t, time.Minute, "member A processed 2·bound records of every partition", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for p := range int32(4) {
			if perPart[p] < 2*bound {
				return false
			}
		}
		return true
	})
	mu.Lock()
	t.Logf("B joins with A at %d settled, %v by partition", a.Stats().Acked, perPart)
	mu.Unlock()
	b, bDone := member(false, 0)
	eventually(t, time.Minute, "every record settled", func() bool {
		return a.Stats().Acked+b.Stats().Acked >= n && a.Stats().InFlight == 0 && b.Stats().InFlight == 0 &&
			distinct(t, out) == n
	})
	cancel()
	for _, done := range []chan error{aDone, bDone} {
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	ids, recs := readAll(t, out)
	dup := len(recs) - n
	checkEvery(t, ids, n)
	t.Logf("A settled %d, B %d; %d records stored twice (bound %d)", a.Stats().Acked, b.Stats().Acked, dup, bound)
	if b.Stats().Acked == 0 {
		t.Fatal("B got no partition")
	}
	if dup > bound {
		t.Fatalf("%d records processed twice; at most %d (A's records in flight) if the revoke committed A's settled prefix", dup, bound)
	}
}

// distinct counts the distinct values in topic so far.
func distinct(t testing.TB, topic string) int {
	t.Helper()
	ids, _ := readAll(t, topic)
	return len(ids)
}

// TestARedeliveryPendingOnARevokedPartitionLeavesTheFlow: member A fails
// the first delivery of offset 0 of both partitions, so that it holds a
// redelivery pending on each (a long delay) when B joins. Whichever
// partition moves, the record pending on it is the new owner's; A must
// stop counting it in flight, or StopWhenCaughtUp never stops A (and with
// MaxInFlight reached, A never fetches again).
func TestARedeliveryPendingOnARevokedPartitionLeavesTheFlow(t *testing.T) {
	in, out := newTopic(t, 2), newTopic(t, 2)
	const n, group = 70, "pending-redelivery"
	produceToPartitions(t, in, n, 2)
	sink := newSink(t, kafkax.ToTopic(out))
	var failed atomic.Int64
	member := func(isA bool) (*kafkax.Source, chan error) {
		opts := []kafkax.SourceOption{kafkax.StopWhenCaughtUp(), kafkax.MaxInFlight(2)}
		if isA {
			opts = append(opts, kafkax.Redeliver(3, 8*time.Second))
		}
		src := newSource(t, group, []string{in}, opts...)
		p := sluice.New(ctxT(t, 2*time.Minute))
		outs := sluice.FlatMap(p, "work", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg, emit func(kafkax.Out) bool) error {
			if isA && m.Offset() == 0 && m.Delivery() == 1 {
				failed.Add(1)
				m.Fail(errors.New("later"))
				return nil
			}
			emit(copyOut(m))
			return nil
		})
		kafkax.Produce(p, "write", outs, sink)
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		return src, done
	}
	a, aDone := member(true)
	eventually(t, time.Minute, "A holds a redelivery on each partition", func() bool { return failed.Load() == 2 })
	b, bDone := member(false)
	for name, done := range map[string]chan error{"A": aDone, "B": bDone} {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("member %s: %v", name, err)
			}
		case <-time.After(90 * time.Second):
			t.Fatalf("member %s did not stop (A %+v; B %+v)", name, a.Stats(), b.Stats())
		}
	}
	if b.Stats().Acked == 0 {
		t.Fatal("B got no partition")
	}
	ids, _ := readAll(t, out)
	checkEvery(t, ids, n)
	if l := lag(t, group, in); l != 0 {
		t.Fatalf("group lag %d; want 0", l)
	}
}
