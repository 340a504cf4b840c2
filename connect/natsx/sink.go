package natsx

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"
)

// Out is a message for a [Sink] to publish.
type Out struct {
	Subject string
	Data    []byte
	// Header is sent with the message, with Nats-Msg-Id (and, with
	// [ToStream], Nats-Expected-Stream) added to a copy of it.
	Header nats.Header
	// ID becomes the message's Nats-Msg-Id: within the stream's
	// duplicate window the server stores only the first message with a
	// given ID, so a message published again — by a [sluice.Retry] of its
	// write, or after its From message was delivered again — is stored
	// once. Empty: no ID, no de-duplication.
	ID string
	// From is the receipt of the message this one derives from (a
	// [Msg]'s Receipt, or any connector's), settled by the stage once
	// the server has stored this one; the zero Receipt for none.
	From sluice.Receipt
}

// Origin returns o.From, so that an Out is a [sluice.Carrier]: the
// pipeline's sinks settle it.
func (o *Out) Origin() sluice.Receipt { return o.From }

// Sink publishes messages to JetStream. Create one with [NewSink]; add it
// to a pipeline with [Publish] or [PublishBatches], or call [Sink.Write]
// from a stage of your own. One Sink may serve several stages and
// pipelines.
type Sink struct {
	pub *publisher
	cfg sinkConfig

	published atomic.Int64
	failed    atomic.Int64
	rejected  atomic.Int64

	log   *logger       // nil without a Logger
	fails *sluice.Tally // messages not stored
}

// NewSink checks that JetStream is reachable through js (and, with
// [ToStream], that the stream exists), so that such mistakes are reported
// here rather than as publish failures later. Its requests are bounded by
// ctx, and by [DefaultStartTimeout] if ctx has no deadline.
//
// The sink publishes on js's connection and takes the server's
// acknowledgements on an inbox subscription of its own, with a goroutine
// that fails the messages waiting for one when the connection is lost.
// Call [Sink.Close] when done with it, or close the connection: either
// ends the subscription and the goroutine.
func NewSink(ctx context.Context, js jetstream.JetStream, opts ...SinkOption) (*Sink, error) {
	if js == nil {
		panic("natsx: NewSink: nil JetStream")
	}
	cfg := sinkOptions(opts)
	ctx, cancel := bounded(ctx, cfg.startTimeout)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err != nil {
		return nil, fmt.Errorf("natsx: sink: JetStream: %w", explain(err))
	}
	if cfg.stream != "" {
		if _, err := js.Stream(ctx, cfg.stream); err != nil {
			return nil, fmt.Errorf("natsx: sink stream %q: %w", cfg.stream, explain(err))
		}
	}
	var attrs []any
	if cfg.stream != "" {
		attrs = append(attrs, slog.String("stream", cfg.stream))
	}
	log := newLogger(cfg.Logger, js.Conn(), attrs...)
	pub, err := newPublisher(js.Conn(), log)
	if err != nil {
		return nil, fmt.Errorf("natsx: sink: %w", explain(err))
	}
	return &Sink{pub: pub, cfg: cfg, log: log, fails: log.tally(slog.LevelWarn, "writes failed")}, nil
}

// Close ends the sink's inbox subscription and its goroutine, and
// returns once the goroutine has. Messages still waiting for an
// acknowledgement fail, and so does every later Write. Close is safe to
// call more than once.
func (s *Sink) Close() {
	s.pub.close()
	s.fails.Flush()
}

// SinkStats counts what a [Sink] has done since it was created.
type SinkStats struct {
	Published int64 // messages the server has stored (or recognised as duplicates)
	Failed    int64 // messages a Write did not store: rejected, refused or unanswered
	Rejected  int64 // of those, messages the server rejected or the client refused
}

// Stats returns the sink's counts. It is safe to call at any time.
func (s *Sink) Stats() SinkStats {
	return SinkStats{Published: s.published.Load(), Failed: s.failed.Load(), Rejected: s.rejected.Load()}
}

// Publish starts a sink stage of [SinkWorkers] goroutines that write the
// messages of in with [Sink.Write] as they arrive: each write takes every
// message waiting in the stage's input, up to [DefaultGather] (see
// [sluice.Gather]; give Publish another to change it). Once a message is
// stored, the stage acknowledges its From receipt. opts are the stage's
// options: a write that fails fails the pipeline unless [sluice.Retry]
// writes again the messages not stored (give each Out an ID, so that one
// stored but unanswered is stored once) or [sluice.SkipErrors] or
// [sluice.DeadLetter] settles each of them. The sink's counts
// ([Sink.Stats]) are the stage's [sluice.StageStats].Connector (the first
// such stage's, when several stages of p share the sink), so an exporter
// of the pipeline shows them (the sluice.nats.sink metrics).
func Publish(p *sluice.Pipeline, name string, in sluice.Stream[Out], sink *Sink, opts ...sluice.StageOption) {
	if sink == nil {
		panic(fmt.Sprintf("natsx: Publish %q: nil Sink", name))
	}
	sluice.ForEachChunk(p, name, in, sink.cfg.workers, sink.Write, gathered(opts)...)
	sink.attach(p, name)
}

// PublishBatches is [Publish] for a stream of batches (from
// [sluice.Batch], say): each write takes the batches waiting, up to
// [DefaultGather] messages (a larger batch goes alone), and a batch's
// receipts are acknowledged once all of it is stored. An error option
// applies to a batch as a whole.
func PublishBatches(p *sluice.Pipeline, name string, in sluice.Stream[[]Out], sink *Sink, opts ...sluice.StageOption) {
	if sink == nil {
		panic(fmt.Sprintf("natsx: PublishBatches %q: nil Sink", name))
	}
	sluice.ForEachChunk(p, name, in, sink.cfg.workers, sink.writeBatches, gathered(opts)...)
	sink.attach(p, name)
}

// gathered puts the default Gather before opts, which may override it.
func gathered(opts []sluice.StageOption) []sluice.StageOption {
	return append([]sluice.StageOption{sluice.Gather(DefaultGather)}, opts...)
}

// Write publishes batch and returns once the server has stored every
// message of it. It settles nothing: [Publish] and [PublishBatches]
// acknowledge the From receipts of what it stored. It sends every message
// without waiting, then waits for the server's
// acknowledgements, up to [AckTimeout]. A message the server rejected (a
// 400 answer: its subject belongs to another stream than [ToStream]'s, it
// is larger than the stream allows, …) or the client refused (larger
// than the server's max payload) has an error marked [sluice.Permanent]:
// writing it again cannot help, so a [sluice.Retry] gives up on it at
// once and the stage's policy settles it. When no message was stored, the
// error names how many failed and why (marked Permanent when every one
// was rejected); when some were, it is a [sluice.ItemErrors] with the
// error of each message not stored, so that a [Publish] stage retries and
// settles only those. Write itself sends nothing twice: a message no
// stream answered for ([jetstream.ErrNoStreamResponse]: none holds its
// subject, or the stream is between leaders), or whose answer was lost
// with the connection ([nats.ErrDisconnected]) or did not come in time,
// fails, and the stage's [sluice.Retry] sends it again. Write is safe for
// concurrent use.
func (s *Sink) Write(ctx context.Context, batch []Out) error {
	msgs := s.messages([][]Out{batch}, len(batch))
	fs, err := s.send(ctx, msgs)
	if len(fs) == 0 {
		return nil
	}
	if err != nil || len(fs) == len(msgs) {
		return whole(msgs, fs, err)
	}
	errs := make(sluice.ItemErrors, len(msgs))
	for _, f := range fs {
		errs[f.i] = f.err
	}
	return errs
}

// writeBatches writes batches as one Write would their messages; a batch
// fails when any of its messages was not stored.
func (s *Sink) writeBatches(ctx context.Context, batches [][]Out) error {
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	msgs := s.messages(batches, n)
	fs, err := s.send(ctx, msgs)
	if len(fs) == 0 {
		return nil
	}
	if err != nil {
		return whole(msgs, fs, err)
	}
	// The batch of each message, by its index.
	of := make([]int, 0, n)
	for b, batch := range batches {
		for range batch {
			of = append(of, b)
		}
	}
	errs := make(sluice.ItemErrors, len(batches))
	failed := 0
	for _, f := range fs {
		if b := of[f.i]; errs[b] == nil {
			errs[b] = f.err
			failed++
		}
	}
	if failed == len(batches) {
		return whole(msgs, fs, nil)
	}
	return errs
}
