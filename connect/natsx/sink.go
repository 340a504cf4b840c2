package natsx

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

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
	js  jetstream.JetStream // the sink's own publishing context
	cfg sinkConfig

	published atomic.Int64
	failed    atomic.Int64
	rejected  atomic.Int64
}

// NewSink checks that JetStream is reachable through js (and, with
// [ToStream], that the stream exists), so that such mistakes are reported
// here rather than as publish failures later. Its requests are bounded by
// ctx, and by [DefaultStartTimeout] if ctx has no deadline.
//
// The sink publishes through its own JetStream context on js's connection,
// whose pending acknowledgements time out after [AckTimeout]. Call
// [Sink.Close] when done with it, or close the connection.
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
	jo := js.Options()
	pubOpts := []jetstream.JetStreamOpt{
		jetstream.WithPublishAsyncTimeout(cfg.ackTimeout),
		jetstream.WithPublishAsyncMaxPending(max(4000, 2*cfg.workers*sluice.DefaultChunk)),
	}
	var own jetstream.JetStream
	var err error
	switch {
	case jo.Domain != "":
		own, err = jetstream.NewWithDomain(js.Conn(), jo.Domain, pubOpts...)
	case jo.APIPrefix != "":
		own, err = jetstream.NewWithAPIPrefix(js.Conn(), jo.APIPrefix, pubOpts...)
	default:
		own, err = jetstream.New(js.Conn(), pubOpts...)
	}
	if err != nil {
		return nil, fmt.Errorf("natsx: sink: %w", err)
	}
	return &Sink{js: own, cfg: cfg}, nil
}

// Close releases the sink's publishing context: its reply subscription and
// connection listener. Publishes still waiting for an acknowledgement fail.
func (s *Sink) Close() { s.js.CleanupPublisher() }

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
// messages of in with [Sink.Write] as they arrive, a chunk at a time (as
// many as are ready, up to the producer's chunk size: see
// [sluice.ForEachChunk]). Once a chunk is stored, the stage acknowledges
// its messages' From receipts. opts are the stage's options: an error
// from a write fails the pipeline unless [sluice.Retry] writes the chunk
// again (give each Out an ID, so that what was stored the first time is
// stored once) or [sluice.SkipErrors] or [sluice.DeadLetter] settles
// every message of the chunk.
func Publish(p *sluice.Pipeline, name string, in sluice.Stream[Out], sink *Sink, opts ...sluice.StageOption) {
	if sink == nil {
		panic(fmt.Sprintf("natsx: Publish %q: nil Sink", name))
	}
	sluice.ForEachChunk(p, name, in, sink.cfg.workers, sink.Write, opts...)
}

// PublishBatches is [Publish] for a stream of batches (from
// [sluice.Batch], say): each batch is one [Sink.Write], and a batch's
// receipts are acknowledged once it is stored. An error option applies
// to a batch as a whole.
func PublishBatches(p *sluice.Pipeline, name string, in sluice.Stream[[]Out], sink *Sink, opts ...sluice.StageOption) {
	if sink == nil {
		panic(fmt.Sprintf("natsx: PublishBatches %q: nil Sink", name))
	}
	sluice.ForEach(p, name, in, sink.cfg.workers, sink.Write, opts...)
}

// Write publishes batch and returns once the server has stored every
// message of it, or with an error naming one message not stored. It
// settles nothing: [Publish] and [PublishBatches] acknowledge the From
// receipts once it returns nil. It sends every message without waiting
// (PublishAsync), then waits for the server's acknowledgements, up to
// [AckTimeout]. When every message not stored was rejected by the server
// (a 400 answer: its subject belongs to another stream than [ToStream]'s,
// it is larger than the stream allows, …) or refused by the client
// (larger than the server's max payload), the error is marked
// [sluice.Permanent]: writing the batch again cannot help, so a
// [sluice.Retry] gives up at once and the stage's policy settles it. The
// messages stored are stored whatever the error. Write is safe for
// concurrent use.
func (s *Sink) Write(ctx context.Context, batch []Out) error {
	if len(batch) == 0 {
		return nil
	}
	left, rejected, err, rejErr := s.send(ctx, s.messages(batch))
	s.published.Add(int64(len(batch) - len(left) - len(rejected)))
	s.failed.Add(int64(len(left) + len(rejected)))
	s.rejected.Add(int64(len(rejected)))
	var errs []error
	if len(rejected) > 0 {
		errs = append(errs, fmt.Errorf("natsx: the server rejected %d of %d messages, e.g. one to %q: %w",
			len(rejected), len(batch), batch[rejected[0]].Subject, rejErr))
	}
	if len(left) > 0 {
		if ctx.Err() != nil {
			return errors.Join(append([]error{ctx.Err()}, errs...)...)
		}
		return errors.Join(append(errs, fmt.Errorf("natsx: %d of %d messages not stored, e.g. one to %q: %w",
			len(left), len(batch), batch[left[0]].Subject, err))...)
	}
	if len(errs) > 0 {
		return sluice.Permanent(errs[0])
	}
	return nil
}

// messages returns the messages to send for batch.
func (s *Sink) messages(batch []Out) []nats.Msg {
	msgs := make([]nats.Msg, len(batch))
	for i := range batch {
		o := &batch[i]
		h := o.Header
		if o.ID != "" || s.cfg.stream != "" {
			// A copy: the caller's header may be shared between messages.
			h = make(nats.Header, len(o.Header)+2)
			for k, v := range o.Header {
				h[k] = v
			}
			if o.ID != "" {
				h[jetstream.MsgIDHeader] = []string{o.ID}
			}
			if s.cfg.stream != "" {
				h[jetstream.ExpectedStreamHeader] = []string{s.cfg.stream}
			}
		}
		msgs[i] = nats.Msg{Subject: o.Subject, Data: o.Data, Header: h}
	}
	return msgs
}

// send publishes msgs and waits for the server's answers, up to the ack
// timeout. It returns the indexes of those not stored with the first
// error seen (nil when none is left), and of those rejected — no use
// sending them again — with the first rejection.
func (s *Sink) send(ctx context.Context, msgs []nats.Msg) (left, rejected []int, err, rejErr error) {
	var firstErr error
	fail := func(i int, err error) {
		if permanent(err) {
			rejected = append(rejected, i)
			if rejErr == nil {
				rejErr = err
			}
			return
		}
		left = append(left, i)
		if firstErr == nil {
			firstErr = err
		}
	}
	futs := make([]jetstream.PubAckFuture, len(msgs))
	for i := range msgs {
		// nats.go keeps the message until its acknowledgement arrives or
		// times out, after send has returned: msgs is not reused.
		f, err := s.js.PublishMsgAsync(&msgs[i])
		if err != nil {
			fail(i, err)
			continue
		}
		futs[i] = f
	}
	timer := time.NewTimer(s.cfg.ackTimeout)
	defer timer.Stop()
	expired := false
	for i, f := range futs {
		switch {
		case f == nil: // failed to send, counted above
		case expired:
			// Take what has arrived; wait no more.
			select {
			case <-f.Ok():
			case err := <-f.Err():
				fail(i, err)
			default:
				fail(i, fmt.Errorf("no acknowledgement from the server within %v", s.cfg.ackTimeout))
			}
		default:
			select {
			case <-f.Ok():
			case err := <-f.Err():
				fail(i, err)
			case <-timer.C:
				expired = true
				fail(i, fmt.Errorf("no acknowledgement from the server within %v", s.cfg.ackTimeout))
			case <-ctx.Done():
				for k := i; k < len(futs); k++ {
					if futs[k] != nil {
						left = append(left, k)
					}
				}
				return left, rejected, ctx.Err(), rejErr
			}
		}
	}
	if len(left) == 0 {
		return nil, rejected, nil, rejErr
	}
	return left, rejected, firstErr, rejErr
}

// permanent reports whether err, from publishing one message, rejects the
// message itself, so that sending it again cannot succeed: the server's
// 400 answers (its subject belongs to another stream than [ToStream]'s,
// it is larger than the stream allows, …) and the client's refusals.
func permanent(err error) bool {
	var ae *jetstream.APIError
	if errors.As(err, &ae) {
		return ae.Code == 400
	}
	return errors.Is(err, nats.ErrMaxPayload) || errors.Is(err, nats.ErrBadSubject) || errors.Is(err, nats.ErrHeadersNotSupported)
}
