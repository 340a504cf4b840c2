// Package kafkax connects sluice pipelines to Apache Kafka through franz-go:
// a [Source] that reads topics as a member of a consumer group, and a
// [Sink] that produces records with the idempotent producer.
//
//	src, err := kafkax.NewSource(ctx, "127.0.0.1:9092", "billing", []string{"orders"}, kafkax.MaxInFlight(10000))
//	sink, err := kafkax.NewSink(ctx, "127.0.0.1:9092", kafkax.ToTopic("invoices"))
//	p := sluice.New(ctx)
//	msgs := kafkax.Read(p, "read", src)
//	outs := sluice.Map(p, "bill", msgs, 4, func(ctx context.Context, m kafkax.Msg) (kafkax.Out, error) {
//		return kafkax.Out{Key: m.Key(), Value: bill(m.Value()), From: m.Receipt}, nil
//	})
//	kafkax.Produce(p, "write", outs, sink)
//	err = p.Wait()
//	src.Close() // commits what is settled, leaves the group
//
// The source builds its own franz-go client, since a group member's
// callbacks live on its client; [WithClient] passes options to it (TLS,
// SASL, fetch sizes). So does the sink.
//
// # Delivery
//
// Delivery is at least once, by sluice's one contract (see
// [sluice.Receipt]). The source emits each record as a [Msg], which embeds
// the record's receipt; the Source is the receipt's [sluice.Settler].
// Stages carry the receipt with what they derive from the record ([Out]'s
// From, or a field of their own type that makes it a [sluice.Carrier]),
// and the stage that stores the result settles it: [Produce] and
// [ProduceBatches] once the broker has stored the record, any other
// connector's sink too. What the core decides on its own — a record that
// [sluice.Filter] drops, that [sluice.SkipErrors] skips — is settled as
// well, and [sluice.Broadcast] and [sluice.FlatMap] hold the receipt once
// per copy or result.
//
// Offsets are committed only for the contiguous settled prefix of each
// partition: stages may finish records in any order (an unordered
// [sluice.Map] with many workers), and a commit never passes a record that
// is not settled. A settled prefix is owed until the broker's answer to a
// commit of it confirms it. The source commits what is owed every
// [CommitEvery] interval while the client is open (during a drain too),
// when a partition is revoked or given back after an outage, when
// [StopWhenCaughtUp] asks whether the group is caught up, and at
// [Source.Close], which reports what it could not commit. Each commit
// records in its metadata the offsets settled past the prefix (out of
// order), as ranges; whoever gets the partition next — another member
// after a rebalance, or this group after a restart or a kill — skips them
// ([SourceStats].Skipped) and delivers again only what was not settled.
// The metadata holds at most 3,000 bytes (the broker's default limit,
// offset.metadata.max.bytes, is 4,096); a range costs its gap from the
// previous one and its length in decimal, and two separators, so at
// least 370 ranges fit while gaps and lengths stay under 1,000. Past
// that, the ranges of the highest offsets are left out and their records
// are delivered again. A record that
// is not settled — the process died, the pipeline stopped, the partition
// moved to another member — is read again from the last commit, by this
// process or another; so results may be produced twice, never zero times.
// Records carry a stable identity ([Msg.ID]: topic/partition/offset) for a
// consumer that wants to drop duplicates. A transaction's marker,
// which takes an offset but is no record, is passed by the settled prefix
// on its own. The source reads committed records only: those of an
// aborted transaction are never delivered ([ReadUncommitted] reads them).
//
// # Exactly once, Kafka → Kafka
//
// [Transactional] makes a source commit in Kafka transactions, one per
// epoch: what its [NewTxnSink] produces and the dead letters of
// [DeadLetterTopic] commit with the offsets of the records they came
// from, so that a read-committed consumer sees each input's output once.
// An epoch closes on the settled prefix (emission pauses until what was
// emitted is settled); a failure, a rebalance, a transaction the broker
// timed out or a fenced member aborts it, and its records are delivered
// again. Sinks outside the transaction stay at least once; see
// docs/delivery.md for the guarantee of each source, sink and mode.
//
// # Flow control
//
// At most [MaxInFlight] records are fetched and not settled. When the
// pipeline holds that many, the source pauses fetching (franz-go's
// PauseFetchTopics) and resumes when half are settled: a slow pipeline
// leaves the backlog in Kafka as consumer lag, and memory stays bounded by
// MaxInFlight records plus franz-go's fetch buffers. A drain
// ([sluice.Pipeline.Drain]) ends a waiting poll at once.
//
// # Rebalancing and outages
//
// When the group takes a partition away, the source stops emitting its
// records, commits its settled prefix before the partition moves, and
// ignores later settlements of its records, whose places in the flow are
// given back at once (a redelivery pending on it included): the new owner
// processes again what was not committed. A broker that goes away is
// waited out: franz-go reconnects and reports the partitions lost; the
// source keeps what settles meanwhile, and when the group gives the
// partitions back it commits their settled prefixes before fetching
// resumes, skipping what it has already. What settles meanwhile stays
// owed until a commit of it succeeds. If they go to another member instead, that member processes again what
// was not committed, and [Source.Close] says so in its error.
//
// # Failures
//
// A record settled with a failure ([sluice.Receipt.Fail]) is not a failed
// pipeline: it is delivered again after a delay, until it has been
// delivered [Redeliver] times, and then produced to a dead-letter topic
// ([DeadLetterTo]) with the error and its source topic, partition and
// offset in headers ([DeadLetterOut]); without one, the source fails the
// run and the record stays uncommitted. Its neighbours go on meanwhile;
// only the commit of its partition waits for it. [NewSource] and
// [NewSink] check that a broker answers and that the topics exist, within
// a bounded time. The producer retries for up to [DeliveryTimeout] before
// [Sink.Write] returns an error; a write that stored some of its records
// names the others ([sluice.ItemErrors]), and a [Produce] stage retries and
// settles only those.
//
// # Logs and traces
//
// [Logger] makes a source or a sink log to a *slog.Logger; nothing is
// logged per record, and no line holds a client option's value:
//
//	level  message                   attributes (besides "group", or "sink")
//	Info   "group joined"            member, generation: the source's first assignment
//	Info   "partitions assigned"     partitions ("topic[0 1]"), member, generation
//	Info   "partitions revoked"      the same, before they move to another member
//	Warn   "partitions lost"         the same: the member was thrown out or cut off
//	Warn   "commit failed"           count, error (at most one line per sluice.LogInterval)
//	Info   "records redelivered"     count, error: failed records delivered again (the same)
//	Warn   "records parked"          count, error: produced to the dead-letter topic (the same)
//	Warn   "records not stored"      count, error: a sink's records the producer gave up on (the same)
//	Warn   "broker unreachable"      broker, error: a dial failed, an outage begins (once)
//	Info   "broker reachable again"  broker, after, failed_dials: the outage ended
//	Warn   "transaction aborted"     transactional_id, cause: a Transactional epoch aborted (once each)
//
// The counted lines also write what is left at [Source.Close] and
// [Sink.Close]. [Propagate] carries trace context through Kafka: a source
// attaches the context in each record's headers to its receipt, so that
// every stage's span continues the producer's trace, and a sink writes the
// context of each Out's From receipt into the record it produces:
//
//	prop := kafkax.Propagate(otelx.W3C())
//	src, _ := kafkax.NewSource(ctx, brokers, group, topics, prop, kafkax.Logger(log))
//	sink, _ := kafkax.NewSink(ctx, brokers, prop, kafkax.Logger(log))
//
// Without Propagate, reading a record costs nothing more; with it, a
// record without headers costs nothing more, and one with a trace context
// costs the propagator's Extract and the context it returns.
//
// # Costs
//
// Per record: one receipt (an allocation) and a few uncontended mutex
// operations (tracked when fetched, settled by its receipt), besides what
// franz-go does. Per batch: a poll on the source; on the sink, one
// produce round trip per [Sink.Write], which takes every record waiting
// (up to [DefaultGather]), and one promise for all its records.
// Per [CommitEvery] interval: one commit round trip for all partitions.
// BenchmarkCopyVsHandLoop compares a copy pipeline with a hand-written
// franz-go loop.
package kafkax
