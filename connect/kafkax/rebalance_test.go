package kafkax_test

import (
	"context"
	"errors"
	"sync"
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
