// Package natsx connects sluice pipelines to NATS JetStream: a [Source]
// that reads a stream through a durable pull consumer, and a [Sink] that
// publishes to streams. It maps sluice's at-least-once contract
// ([sluice.Receipt]) onto JetStream's acks, naks and terms. It takes a
// [jetstream.JetStream] of yours ([Connect] makes a connection suited to a
// pipeline); the embedded server for tests and demos is in package
// natsembed, which a program that imports natsx does not link.
//
//	src, err := natsx.NewSource(ctx, js, "ORDERS", "billing", natsx.MaxInFlight(8192))
//	sink, err := natsx.NewSink(ctx, js, natsx.ToStream("INVOICES"))
//	p := sluice.New(ctx)
//	msgs := natsx.Read(p, "read", src)
//	outs := sluice.Map(p, "bill", msgs, 4, func(ctx context.Context, m natsx.Msg) (natsx.Out, error) {
//		return natsx.Out{Subject: "invoices.new", Data: bill(m.Data()), ID: m.ID(), From: m.Receipt}, nil
//	})
//	natsx.Publish(p, "write", outs, sink, sluice.Retry(5, 50*time.Millisecond, 2*time.Second))
//	err = p.Wait()
//
// # Settling
//
// Delivery is at least once. The source emits each message as a [Msg],
// which embeds the [sluice.Receipt] that settles it; a stage carries the
// receipt along with what it derives from the message ([Out].From, or a
// Receipt embedded in a type of your own), and the pipeline settles it:
//
//   - [Publish], [PublishBatches] and the core's ForEach and ForEachChunk
//     acknowledge a message once everything derived from it is stored
//     (for Publish, once the server has stored its Out);
//   - a message that a Filter drops, that [sluice.SkipErrors] skips or an
//     OnFull policy discards is acknowledged; one that a
//     [sluice.DeadLetter] stage routes is acknowledged once the
//     dead-letter stream's sink has stored it ([DeadLetterOut] makes the
//     message to publish);
//   - FlatMap and Broadcast hold it until each result or copy is settled;
//   - Receipt.Fail(cause), called by your code, settles it as failed: the
//     server delivers it again after the [Redeliver] delay until its last
//     delivery, when it is published to the [DeadLetterTo] subject and
//     terminated.
//
// A message not settled (the process died, the pipeline failed or was
// cancelled, the acknowledgement was lost) is delivered again once the
// consumer's [AckWait] has passed, possibly to another process sharing the
// consumer; so results may be stored twice, never zero times. To make
// duplicates harmless, give each output a stable ID derived from its input
// ([Msg.ID]): the server stores the first message with a given
// Nats-Msg-Id and discards the rest within the stream's duplicate window
// (two minutes unless the stream says otherwise). Acknowledgements are sent
// without waiting for the server's confirmation: one lost on the way is
// such a redelivery. What JetStream offers beyond the contract is kept:
// [Msg.InProgress], the delivery count in [Msg.Metadata].
//
// # Flow control
//
// [MaxInFlight] (the consumer's MaxAckPending) bounds the messages
// delivered and not yet settled, across every process reading the
// consumer: a slow pipeline makes the server deliver more slowly, so memory
// stays bounded by MaxInFlight times the message size, whatever the
// backlog. [StopWhenCaughtUp] ends a run once nothing is left to deliver
// or settle.
//
// # Failures
//
// Retries, skipping and dead letters inside the pipeline are the core's
// stage options ([sluice.Retry], [sluice.SkipErrors], [sluice.DeadLetter]),
// given to any stage, [Publish] included. The broker's own redelivery is
// [Redeliver] and [DeadLetterTo]. No message is lost silently: with a
// bound on deliveries, the server's max-deliveries advisories for the
// consumer are kept in a stream ([NewSource] sees to it), whether or not a
// [Read] runs when the server gives up on a message (its last delivery
// ended unsettled). Each Read resolves the advisories it finds before it
// emits another message: the message is fetched from the stream and
// dead-lettered, or, without DeadLetterTo, the run fails with an error
// naming its stream sequence; only then is the advisory acknowledged. An
// advisory a Read did not resolve (it stopped first, or none ran) is
// resolved by the next Read of the consumer, in any process, and
// [StopWhenCaughtUp] waits for every one. [SourceStats] counts both.
//
// [NewSource], [NewSink] and [Connect] check the configuration against the
// server and return an error naming what is wrong — unreachable server,
// rejected credentials, JetStream off, no such stream or consumer — within
// a bounded time. While running, a lost connection or a restarting server
// is waited out: the client reconnects and the source asks again; a write
// not answered within [AckTimeout] returns an error, which
// [sluice.Retry] on the sink stage turns into another attempt. The source
// fails after [MaxOutage] without an answer, and either fails at once if
// the consumer or stream is deleted or the connection closed for good.
//
// # Logs and traces
//
// [Logger] (an [Option] of [NewSource] and [NewSink]) logs to a
// *slog.Logger, every line with "stream" and "consumer" (the sink's:
// "stream", with [ToStream]) and "server", the URL with its user
// information hidden:
//
//	level  message                   when
//	Info   "consumer created"        NewSource created or updated the consumer ("max_in_flight",
//	                                 "ack_wait", "max_deliver", "dead_letter_to"); with Bind:
//	                                 "consumer bound"
//	Info   "read started"            a Read began ("pipeline", "stage")
//	Info   "read ended"              it ended, with what happened meanwhile: "received", "acked",
//	                                 "failed", "redelivered", "parked", "gave_up", "handed_back",
//	                                 "in_flight", "elapsed"; Error with its "error" if it failed
//	Warn   "outage begun"            the connection was lost, or the server did not answer ("error")
//	Info   "outage ended"            it answers again ("outage": how long it lasted)
//	Warn   "messages parked"         messages failed on their last delivery or given up on by the
//	                                 server were published to DeadLetterTo ("stream_seq",
//	                                 "deliveries", "cause" of the latest)
//	Error  "messages given up"       the server gave up on messages that cannot be dead-lettered:
//	                                 the run fails ("stream_seq", "deliveries", "error")
//	Warn   "parking failed"          a message could not be published to DeadLetterTo
//	                                 ("stream_seq", "error")
//	Warn   "acks failed"             acks, naks or terms the client could not send ("error")
//	Warn   "writes failed"           the sink did not store messages ("subject", "error")
//	Info   "connection closed"       the sink's connection closed
//
// Nothing is logged per message: a line about failures counts them
// ("count") since the last line of its kind, which is at most
// [sluice.LogInterval] ago (the first is written at once), and describes
// the latest; what is left is written when the Read ends or the sink is
// closed. No line or error shows a password or token. Durations are
// text ("elapsed":"1.5s", see [sluice.LogDuration]). The pipeline's own
// dead letters ([sluice.DeadLetter], "dead_lettered" in its "pipeline
// finished" line) and the broker's messages parked on DeadLetterTo
// ("parked") are two things under two names.
//
// [Propagate] carries trace contexts through the broker: the source
// extracts each message's from its headers into its receipt, so that
// every stage's span on what derives from it continues its trace (see
// [sluice.Tracing]), and the sink injects the From receipt's into what it
// publishes. A message without one (or read without Propagate) gets the
// trace its Read stage's span begins, when the pipeline traces. Every
// span on one message describes it ([Source.Describe]: system "nats",
// its subject and its ID). With the otelx module:
//
//	p := sluice.New(ctx, sluice.Tracing(otelx.NewTracer(provider)))
//	src, err := natsx.NewSource(ctx, js, "ORDERS", "billing", natsx.Propagate(otelx.W3C()), natsx.Logger(log))
//	sink, err := natsx.NewSink(ctx, js, natsx.Propagate(otelx.W3C()), natsx.Logger(log))
package natsx
