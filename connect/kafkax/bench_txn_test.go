package kafkax_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// BenchmarkTransactionalVsAtLeastOnce copies the same records through the
// same pipeline (read → Map → Produce) at least once and in Transactional
// mode with 100ms and 500ms epochs — with kafkax's client settings, and
// with franz-go's defaults for the two that kafkax sets (a 10ms producer
// linger, retries after 250ms: what kafkax had before) — runs of the
// three interleaved, and reports each one's median throughput — from the
// first record read until every record is stored and settled (the last
// commit follows; each run checks that the group committed to the end) —
// and the ratios; the target is transactional ≥ 70 % of at least
// once:
//
//	go test -run '^$' -bench TransactionalVsAtLeastOnce -benchtime 5x ./connect/kafkax
func BenchmarkTransactionalVsAtLeastOnce(b *testing.B) {
	const n = 300000
	in, out := newTopic(b, 4), newTopic(b, 4)
	produceValues(b, in, n, 100)
	copyUntilCaughtUp(b, in, out, "bench-alo-warm", n, 0)
	copyUntilCaughtUp(b, in, out, "bench-txn-warm", n, 100*time.Millisecond)
	for _, epoch := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond} {
		b.Run(fmt.Sprintf("epoch=%v", epoch), func(b *testing.B) { benchTxn(b, in, out, n, epoch) })
	}
}

func benchTxn(b *testing.B, in, out string, n int, epoch time.Duration) {
	var alo, txn, fd, commit, epochs []float64
	run := 0
	for b.Loop() {
		run++
		alo = append(alo, float64(n)/copyUntilCaughtUp(b, in, out, fmt.Sprintf("bench-alo-%v-%d", epoch, run), n, 0).took.Seconds())
		r := copyUntilCaughtUp(b, in, out, fmt.Sprintf("bench-txn-%v-%d", epoch, run), n, epoch)
		txn = append(txn, float64(n)/r.took.Seconds())
		commit = append(commit, float64(r.st.TxnCommitTime.Milliseconds())/float64(r.st.TxnCommitted))
		epochs = append(epochs, float64(r.st.TxnEpochTime.Milliseconds())/float64(r.st.TxnCommitted))
		fd = append(fd, float64(n)/copyUntilCaughtUp(b, in, out, fmt.Sprintf("bench-fd-%v-%d", epoch, run), -n, epoch).took.Seconds())
	}
	for _, xs := range [][]float64{alo, txn, fd, commit, epochs} {
		slices.Sort(xs)
	}
	med := func(xs []float64) float64 { return xs[len(xs)/2] }
	ma, mt, mf := med(alo), med(txn), med(fd)
	b.ReportMetric(ma, "at-least-once-rec/s")
	b.ReportMetric(mt, "transactional-rec/s")
	b.ReportMetric(100*mt/ma, "ratio-%")
	b.ReportMetric(100*mf/ma, "franz-defaults-ratio-%")
	b.ReportMetric(med(commit), "epoch-close-ms")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d runs each: at least once median %.0f rec/s (min %.0f, max %.0f); transactional median %.0f rec/s (min %.0f, max %.0f), "+
		"with franz-go's defaults median %.0f rec/s (min %.0f, max %.0f); epoch median %.1f ms, its close %.1f ms",
		len(alo), ma, alo[0], alo[len(alo)-1], mt, txn[0], txn[len(txn)-1], mf, fd[0], fd[len(fd)-1], med(epochs), med(commit))
}

type copyRun struct {
	took time.Duration
	st   kafkax.SourceStats
}

// copyUntilCaughtUp copies the n records of in to out with a new group,
// in epochs (transactionally; 0: at least once; n < 0: -n records, the
// client with franz-go's defaults), until the source is caught up, and
// checks that each was produced once and the group committed to the end.
func copyUntilCaughtUp(b *testing.B, in, out, group string, n int, epoch time.Duration) copyRun {
	transactional := epoch > 0
	franzDefaults := n < 0
	n = max(n, -n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := []kafkax.SourceOption{kafkax.StopWhenCaughtUp()}
	if transactional {
		opts = append(opts, kafkax.Transactional(group, epoch))
	}
	if franzDefaults {
		opts = append(opts, kafkax.WithClient(kgo.ProducerLinger(10*time.Millisecond),
			kgo.RetryBackoffFn(func(tries int) time.Duration { return min(250*time.Millisecond<<max(tries-1, 0), 5*time.Second) })))
	}
	src, err := kafkax.NewSource(ctx, broker, group, []string{in}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	var sink *kafkax.Sink
	if transactional {
		sink, err = kafkax.NewTxnSink(ctx, src, kafkax.ToTopic(out))
	} else {
		sink, err = kafkax.NewSink(ctx, broker, kafkax.ToTopic(out))
	}
	if err != nil {
		b.Fatal(err)
	}
	var first atomic.Int64
	p := sluice.New(ctx)
	outs := sluice.Map(p, "copy", kafkax.Read(p, "read", src), 1, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		if first.Load() == 0 {
			first.CompareAndSwap(0, time.Now().UnixNano())
		}
		return kafkax.Out{Key: m.Key(), Value: m.Value(), From: m.Receipt}, nil
	})
	kafkax.Produce(p, "write", outs, sink)
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	// Throughput is until every record is stored and settled; the last
	// epoch's commit, and the at-least-once source's last commit, follow.
	for src.Stats().Acked < int64(n) {
		select {
		case err := <-done:
			b.Fatalf("the pipeline stopped early: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	took := time.Since(time.Unix(0, first.Load()))
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	st := src.Stats()
	sink.Close()
	if err := src.Close(); err != nil {
		b.Fatal(err)
	}
	if ss := sink.Stats(); ss.Produced != int64(n) || st.TxnAborted != 0 {
		b.Fatalf("produced %d records with %d aborts; want %d, none", ss.Produced, st.TxnAborted, n)
	}
	if l := lag(b, group, in); l != 0 {
		b.Fatalf("left a lag of %d", l)
	}
	return copyRun{took, st}
}
