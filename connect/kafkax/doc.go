// Package kafkax connects sluice pipelines to Apache Kafka through franz-go:
// a [Source] that reads topics as a member of a consumer group, and a
// [Sink] that produces batches with the idempotent producer.
//
//	src, err := kafkax.NewSource(ctx, "127.0.0.1:9092", "billing", []string{"orders"}, kafkax.MaxInFlight(10000))
//	sink, err := kafkax.NewSink(ctx, "127.0.0.1:9092", kafkax.ToTopic("invoices"))
//	p := sluice.New(ctx)
//	msgs := kafkax.Read(p, "read", src)
//	outs := sluice.Map(p, "bill", msgs, 4, func(ctx context.Context, m kafkax.Msg) (kafkax.Out, error) {
//		return kafkax.Out{Key: m.Key(), Value: bill(m.Value()), From: m}, nil
//	})
//	kafkax.Produce(p, "write", outs, sink)
//	err = p.Wait()
//	src.Close() // commits what is settled, leaves the group
//
// # Delivery
//
// Delivery is at least once. The source emits each record as a [Msg] that
// carries its commit handle; stages carry it along with what they derive
// from it (in [Out].From, or in a field of their own type), and it is
// settled once the result is committed — by [Produce], when the broker has
// acknowledged every record derived from it ([Msg.Expect] when there are
// several). Offsets are committed only for the contiguous settled prefix
// of each partition: stages may finish records in any order (an unordered
// [sluice.Map] with many workers), and a commit never passes a record that
// is not settled. Commits are batched ([CommitEvery]). A record that is not
// settled — the process died, the pipeline stopped, the partition moved to
// another member — is read again from the last commit, by this process or
// another; so results may be produced twice, never zero times. Records
// carry a stable identity ([Msg.ID]: topic/partition/offset) for a
// consumer that wants to drop duplicates.
//
// # Flow control
//
// At most [MaxInFlight] records are emitted and not settled. When the
// pipeline holds that many, the source pauses fetching (franz-go's
// PauseFetchTopics) and resumes when half are settled: a slow pipeline
// leaves the backlog in Kafka as consumer lag, and memory stays bounded by
// MaxInFlight records plus franz-go's fetch buffers.
//
// # Rebalancing
//
// When the group takes a partition away, the source stops emitting its
// records, commits its settled prefix before the partition moves, and
// ignores later settlements of its records: the new owner processes again
// what was not committed. A member thrown out of the group (its session
// expired) commits nothing for the partitions it lost.
//
// # Failures
//
// A record whose processing failed is settled with [Msg.Fail], not by
// failing the pipeline: it is emitted again after a delay, up to
// [Attempts] times, and then produced to a dead-letter topic
// ([DeadLetter]) with the error and its source topic, partition and offset
// in headers ([DeadLetterOut]); without one, the source fails the run and
// the record stays uncommitted. Its neighbours go on meanwhile; only the
// commit of its partition waits for it. [NewSource] and [NewSink] check that
// a broker answers and that the topics exist, within a bounded time. While
// running, a broker that goes away is waited out: franz-go reconnects,
// fetches resume, commits that failed are made again with the next batch,
// and the producer retries for up to [DeliveryTimeout] before the sink
// fails the run.
//
// # Costs
//
// Per record: a few uncontended mutex operations (tracked when emitted,
// settled by the sink's promise), besides what franz-go does. Per batch: a
// poll on the source; a produce round trip on each of [SinkWorkers]
// goroutines. Per [CommitEvery] interval: one commit round trip for all
// partitions. Measured figures are in BenchmarkCopyVsHandLoop and the
// repository's README.
package kafkax
