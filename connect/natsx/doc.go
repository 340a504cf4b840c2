// Package natsx connects sluice pipelines to NATS JetStream: a [Source]
// that reads a stream through a durable pull consumer, a [Sink] that
// publishes to streams, and an embedded server ([StartEmbedded]) for tests
// and demos.
//
//	src, err := natsx.NewSource(ctx, js, "ORDERS", "billing", natsx.MaxAckPending(8192))
//	sink, err := natsx.NewSink(ctx, js, natsx.ToStream("INVOICES"))
//	p := sluice.New(ctx)
//	msgs := natsx.Read(p, "read", src)
//	outs := sluice.Map(p, "bill", msgs, 4, func(ctx context.Context, m natsx.Msg) (natsx.Out, error) {
//		return natsx.Out{Subject: "invoices.new", Data: bill(m.Data()), ID: m.ID(), From: m}, nil
//	})
//	natsx.Publish(p, "write", outs, sink)
//	err = p.Wait()
//
// # Delivery
//
// Delivery is at least once. The source emits each message as a [Msg] that
// carries its acknowledgement handle; stages carry it along with what they
// derive from it (in [Out].From, or in a field of their own type), and a
// message is acknowledged only after the result derived from it has been
// committed — for [Publish], after the server has stored every message of
// the batch it was in. A message that is not acknowledged (the process
// died, the pipeline stopped, the acknowledgement was lost) is delivered
// again once the consumer's AckWait has passed, possibly to another process
// sharing the consumer; so results may be committed twice, never zero
// times. A failed item is settled by [Msg.Fail]: negatively acknowledged
// with a delay (redelivered) or terminated, as [NakOnFail] or [TermOnFail]
// chose. To make duplicates harmless, give each output a stable ID derived
// from its input ([Msg.ID]): the server stores the first message with a
// given Nats-Msg-Id and discards the rest within the stream's duplicate
// window (two minutes unless the stream says otherwise).
//
// # Flow control
//
// The consumer's [MaxAckPending] bounds the messages delivered and not yet
// settled, across every process reading it: a slow pipeline makes the
// server deliver more slowly, so memory stays bounded by MaxAckPending
// times the message size, whatever the backlog.
//
// # Failures
//
// A message whose processing fails is settled with [Msg.Fail], not by
// failing the pipeline: with [DeadLetter] it is tried again until its
// configured delivery, then published to a dead-letter subject with the
// error and its origin in headers, and the run goes on. No message is lost
// silently: while a [Read] runs, the source listens to the server's
// max-deliveries advisories, and a message the server stopped delivering
// ([MaxDeliver] reached unsettled) is fetched from the stream and
// dead-lettered, or, without DeadLetter, fails the run with an error
// naming its stream sequence. [SourceStats] counts both.
//
// [NewSource], [NewSink] and [Connect] check the configuration against the
// server and return an error naming what is wrong — unreachable server,
// rejected credentials, JetStream off, no such stream or consumer — within
// a bounded time. While running, a lost connection or a restarting server
// is waited out: the client reconnects, the source asks again, the sink
// retries what was not acknowledged. The source fails after [MaxOutage]
// without an answer, the sink after its [Retries], and either at once if
// the consumer or stream is deleted or the connection closed for good.
package natsx
