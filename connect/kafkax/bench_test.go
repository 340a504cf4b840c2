package kafkax_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/connect/kafkax"
)

// BenchmarkCopyVsHandLoop compares, on the tests' broker and in the same
// run, a sluice pipeline (Read → a trivial Map → Produce) with a
// hand-written franz-go loop that gives the same guarantee (poll, produce
// every record, wait for the broker's acknowledgements, commit the polled
// offsets, poll again). The loop produces each poll (up to 10000 records)
// before it waits; the pipeline runs with its defaults (chunks of its own
// choosing, Produce gathering what waits). Each iteration runs one of
// each, alternately, over
// the same 200k-record topic with fresh groups; the time is from the first
// record received to the last offset committed, so that joining the group
// is left out, and one pair runs first to warm the broker up. It also
// reports the CPU time this process spent per record (the broker's is not
// counted), which a loaded machine disturbs less than the rates. Each run checks its own answer: every record produced, and
// the group's lag 0. It reports the medians and the overhead of sluice over
// the loop; the log gives min–max.
//
//	go test -run '^$' -bench CopyVsHandLoop -benchtime 7x ./connect/kafkax
func BenchmarkCopyVsHandLoop(b *testing.B) {
	const n = 200000
	in, out := newTopic(b, 4), newTopic(b, 4)
	produceValues(b, in, n, 100)
	var ours, hand []float64       // records/s
	var oursCPU, handCPU []float64 // this process's CPU µs per record
	// One pair first, not counted: the broker's JIT warms up.
	copySluice(b, in, out, "bench-sluice-warm", n)
	copyHand(b, in, out, "bench-hand-warm", n)
	run := 0
	for b.Loop() {
		run++
		c := cpuTime()
		ours = append(ours, float64(n)/copySluice(b, in, out, fmt.Sprintf("bench-sluice-%d", run), n).Seconds())
		oursCPU = append(oursCPU, float64((cpuTime()-c).Microseconds())/n)
		c = cpuTime()
		hand = append(hand, float64(n)/copyHand(b, in, out, fmt.Sprintf("bench-hand-%d", run), n).Seconds())
		handCPU = append(handCPU, float64((cpuTime()-c).Microseconds())/n)
	}
	for _, xs := range [][]float64{ours, hand, oursCPU, handCPU} {
		slices.Sort(xs)
	}
	mo, mh := ours[len(ours)/2], hand[len(hand)/2]
	co, ch := oursCPU[len(oursCPU)/2], handCPU[len(handCPU)/2]
	b.ReportMetric(co, "sluice-cpu-µs/rec")
	b.ReportMetric(ch, "loop-cpu-µs/rec")
	b.ReportMetric(mo, "sluice-rec/s")
	b.ReportMetric(mh, "loop-rec/s")
	b.ReportMetric(100*(mh/mo-1), "overhead-%")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d runs each: sluice median %.0f rec/s (min %.0f, max %.0f); hand loop median %.0f rec/s (min %.0f, max %.0f); overhead %.1f%%",
		len(ours), mo, ours[0], ours[len(ours)-1], mh, hand[0], hand[len(hand)-1], 100*(mh/mo-1))
	b.Logf("client CPU (this process, the broker not counted), µs per record: sluice median %.2f (%.2f–%.2f), loop %.2f (%.2f–%.2f)",
		co, oursCPU[0], oursCPU[len(oursCPU)-1], ch, handCPU[0], handCPU[len(handCPU)-1])
}

// BenchmarkReadCommittedVsUncommitted runs the pipeline of
// BenchmarkCopyVsHandLoop over a topic of plain (non-transactional)
// records, reading committed (the default) and uncommitted, alternately in
// the same run, to show what the isolation level costs a user who writes
// no transactions. It reports the medians and the cost of read committed
// in per cent of the uncommitted rate (negative: faster).
//
//	go test -run '^$' -bench ReadCommittedVsUncommitted -benchtime 7x ./connect/kafkax
func BenchmarkReadCommittedVsUncommitted(b *testing.B) {
	const n = 200000
	in, out := newTopic(b, 4), newTopic(b, 4)
	produceValues(b, in, n, 100)
	var com, unc, comCPU, uncCPU []float64
	copySluice(b, in, out, "bench-rc-warm", n)
	copySluice(b, in, out, "bench-ru-warm", n, kafkax.ReadUncommitted())
	run := 0
	for b.Loop() {
		run++
		c := cpuTime()
		com = append(com, float64(n)/copySluice(b, in, out, fmt.Sprintf("bench-rc-%d", run), n).Seconds())
		comCPU = append(comCPU, float64((cpuTime()-c).Microseconds())/n)
		c = cpuTime()
		unc = append(unc, float64(n)/copySluice(b, in, out, fmt.Sprintf("bench-ru-%d", run), n, kafkax.ReadUncommitted()).Seconds())
		uncCPU = append(uncCPU, float64((cpuTime()-c).Microseconds())/n)
	}
	for _, xs := range [][]float64{com, unc, comCPU, uncCPU} {
		slices.Sort(xs)
	}
	mc, mu := com[len(com)/2], unc[len(unc)/2]
	b.ReportMetric(mc, "committed-rec/s")
	b.ReportMetric(mu, "uncommitted-rec/s")
	b.ReportMetric(comCPU[len(comCPU)/2], "committed-cpu-µs/rec")
	b.ReportMetric(uncCPU[len(uncCPU)/2], "uncommitted-cpu-µs/rec")
	b.ReportMetric(100*(mu/mc-1), "cost-%")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d runs each: read committed median %.0f rec/s (min %.0f, max %.0f); uncommitted median %.0f rec/s (min %.0f, max %.0f)",
		len(com), mc, com[0], com[len(com)-1], mu, unc[0], unc[len(unc)-1])
}

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// produceValues stores n records of size bytes each in topic.
func produceValues(b testing.TB, topic string, n, size int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(100000))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxT(b, 2*time.Minute)
	val := make([]byte, size)
	var failed atomic.Int64
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "%d", i), Value: val}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Add(1)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil || failed.Load() > 0 {
		b.Fatalf("producing the input: %v, %d failed", err, failed.Load())
	}
}

func copySluice(b *testing.B, in, out, group string, n int, opts ...kafkax.SourceOption) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src, err := kafkax.NewSource(ctx, broker, group, []string{in}, opts...)
	if err != nil {
		b.Fatal(err)
	}
	sink, err := kafkax.NewSink(ctx, broker, kafkax.ToTopic(out))
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
	for src.Stats().Acked < int64(n) {
		select {
		case err := <-done:
			b.Fatalf("the pipeline stopped early: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	<-done
	if err := src.Close(); err != nil { // the last commit
		b.Fatal(err)
	}
	took := time.Since(time.Unix(0, first.Load()))
	sink.Close()
	if st := sink.Stats(); st.Produced != int64(n) {
		b.Fatalf("sluice produced %d records; want %d", st.Produced, n)
	}
	if l := lag(b, group, in); l != 0 {
		b.Fatalf("sluice left a lag of %d", l)
	}
	return took
}

func copyHand(b *testing.B, in, out, group string, n int) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cons, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumerGroup(group), kgo.ConsumeTopics(in),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	prod, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic(out), kgo.ProducerLinger(0),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(20000))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	var start time.Time
	var produced, failed atomic.Int64
	for got := 0; got < n; {
		fs := cons.PollRecords(ctx, 10000)
		if err := ctx.Err(); err != nil {
			b.Fatal(err)
		}
		if start.IsZero() && fs.NumRecords() > 0 {
			start = time.Now()
		}
		fs.EachRecord(func(r *kgo.Record) {
			prod.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
				} else {
					produced.Add(1)
				}
			})
		})
		got += fs.NumRecords()
		if err := prod.Flush(ctx); err != nil || failed.Load() > 0 {
			b.Fatalf("produce: %v, %d failed", err, failed.Load())
		}
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	if produced.Load() != int64(n) {
		b.Fatalf("the loop produced %d records; want %d", produced.Load(), n)
	}
	if l := lag(b, group, in); l != 0 {
		b.Fatalf("the loop left a lag of %d", l)
	}
	return took
}
