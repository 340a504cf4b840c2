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
	// given ID, so a message published again — after a retry, or after
	// its From message was delivered again — is stored once. Empty: no
	// ID, no de-duplication.
	ID string
	// From is the message this one was derived from, acknowledged once
	// the server has stored this one; the zero Msg for none. When one
	// message yields several, give From to the last of them only if they
	// are published in order (one sink worker), or settle it yourself in
	// an [OnCommit] function.
	From Msg
}

// Sink publishes messages to JetStream in batches and acknowledges the
// messages they were derived from once the server has stored them. Create
// one with [NewSink]; add it to a pipeline with [Publish] or
// [PublishBatches]. One Sink may serve several stages and pipelines.
type Sink struct {
	js  jetstream.JetStream // the sink's own publishing context
	cfg sinkConfig

	published atomic.Int64
	retried   atomic.Int64
	failed    atomic.Int64
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
		jetstream.WithPublishAsyncMaxPending(max(4000, 2*cfg.workers*cfg.batch)),
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
	Retried   int64 // messages sent again after a failed attempt
	Failed    int64 // messages given up on after the retries
}

// Stats returns the sink's counts. It is safe to call at any time.
func (s *Sink) Stats() SinkStats {
	return SinkStats{Published: s.published.Load(), Retried: s.retried.Load(), Failed: s.failed.Load()}
}

// Publish starts a sink stage that groups the messages of in into batches
// ([PublishBatch]) and publishes them with [PublishBatches]. It is one
// batching goroutine plus [SinkWorkers] publishing goroutines.
func Publish(p *sluice.Pipeline, name string, in sluice.Stream[Out], sink *Sink) {
	if sink == nil {
		panic(fmt.Sprintf("natsx: Publish %q: nil Sink", name))
	}
	batches := sluice.Batch(p, name+"/batch", in, sink.cfg.batch, sink.cfg.batchWait)
	PublishBatches(p, name, batches, sink)
}

// PublishBatches starts a sink stage of [SinkWorkers] goroutines, each
// publishing one batch at a time: it sends every message of the batch
// without waiting (PublishAsync), then waits for the server's
// acknowledgements, sends again those that failed or timed out (up to
// [Retries] times, with growing pauses), and acknowledges each message's
// From once the whole batch is stored. When the retries run out, or the
// server rejects a message (which is never sent again, see [Retries]), the
// From of every message not stored is failed ([Msg.Fail]) and the stage
// fails the pipeline, with an error naming one of their subjects; the
// From of those stored is acknowledged. When the pipeline stops first,
// the From of the messages not stored are handed back ([Msg.Nak]) for
// another delivery.
func PublishBatches(p *sluice.Pipeline, name string, in sluice.Stream[[]Out], sink *Sink) {
	if sink == nil {
		panic(fmt.Sprintf("natsx: PublishBatches %q: nil Sink", name))
	}
	sluice.ForEach(p, name, in, sink.cfg.workers, sink.publish)
}

// publish stores batch, retrying what fails, then settles the From messages.
func (s *Sink) publish(ctx context.Context, batch []Out) error {
	if len(batch) == 0 {
		return nil
	}
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

	todo := make([]int, len(batch)) // indexes not stored yet
	for i := range todo {
		todo[i] = i
	}
	futs := make([]jetstream.PubAckFuture, len(batch))
	wait := s.cfg.retryWait
	var lastErr, rejErr error
	var rejected []int // indexes the server rejected: never sent again
	for attempt := 0; ; attempt++ {
		var err, rerr error
		var rej []int
		todo, rej, err, rerr = s.attempt(ctx, msgs, todo, futs)
		if len(rej) > 0 {
			rejected = append(rejected, rej...)
			if rejErr == nil {
				rejErr = rerr
			}
		}
		if len(todo) == 0 || ctx.Err() != nil {
			break
		}
		lastErr = err
		if attempt == s.cfg.retries {
			break
		}
		if !sleep(ctx, wait) {
			break
		}
		wait = min(2*wait, maxRetryWait)
		s.retried.Add(int64(len(todo)))
	}

	if len(todo) == 0 && len(rejected) == 0 {
		s.published.Add(int64(len(batch)))
		if err := settle(batch, nil, Msg.Ack); err != nil {
			return err
		}
		if s.cfg.onCommit != nil {
			s.cfg.onCommit(batch)
		}
		return nil
	}

	// Some messages were not stored: acknowledge the From of those that
	// were, fail those rejected, hand back the others.
	notStored := make([]bool, len(batch))
	for _, i := range todo {
		notStored[i] = true
	}
	for _, i := range rejected {
		notStored[i] = true
	}
	s.published.Add(int64(len(batch) - len(todo) - len(rejected)))
	ackErr := settle(batch, notStored, Msg.Ack)
	s.failed.Add(int64(len(rejected)))
	var errs []error
	if len(rejected) > 0 {
		errs = append(errs, fmt.Errorf("natsx: the server rejected %d of %d messages, e.g. one to %q: %w",
			len(rejected), len(batch), batch[rejected[0]].Subject, rejErr),
			settleOnly(batch, rejected, func(m Msg) error { return m.Fail(rejErr) }))
	}
	if err := ctx.Err(); err != nil {
		_ = settleOnly(batch, todo, func(m Msg) error { return m.Nak(0) })
		return errors.Join(append([]error{err}, errs...)...)
	}
	if len(todo) > 0 {
		s.failed.Add(int64(len(todo)))
		errs = append(errs, fmt.Errorf("natsx: %d of %d messages not stored after %d attempts, e.g. one to %q: %w",
			len(todo), len(batch), s.cfg.retries+1, batch[todo[0]].Subject, lastErr),
			settleOnly(batch, todo, func(m Msg) error { return m.Fail(lastErr) }))
	}
	return errors.Join(append(errs, ackErr)...)
}

// settle applies f to the From of every message of batch whose skip entry
// is not set (skip may be nil), and returns the first error.
func settle(batch []Out, skip []bool, f func(Msg) error) error {
	var first error
	for i := range batch {
		if skip != nil && skip[i] {
			continue
		}
		if err := f(batch[i].From); err != nil && first == nil {
			first = fmt.Errorf("natsx: settling the message %s came from: %w", batch[i].ID, err)
		}
	}
	return first
}

// settleOnly applies f to the From of batch[i] for every i in idx.
func settleOnly(batch []Out, idx []int, f func(Msg) error) error {
	var first error
	for _, i := range idx {
		if err := f(batch[i].From); err != nil && first == nil {
			first = fmt.Errorf("natsx: settling the message %s came from: %w", batch[i].ID, err)
		}
	}
	return first
}

// attempt publishes msgs[i] for every i in todo and waits for the server's
// answers, up to the ack timeout. It returns the indexes still not stored
// and the first error seen (nil when none is left), and those rejected —
// not to be sent again — with the first rejection.
func (s *Sink) attempt(ctx context.Context, msgs []nats.Msg, todo []int, futs []jetstream.PubAckFuture) (left, rejected []int, err, rejErr error) {
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
	for _, i := range todo {
		// A fresh nats.Msg each time: nats.go keeps the one it was given
		// until its acknowledgement arrives or times out.
		m := msgs[i]
		f, err := s.js.PublishMsgAsync(&m)
		if err != nil {
			futs[i] = nil
			fail(i, err)
			continue
		}
		futs[i] = f
	}
	timer := time.NewTimer(s.cfg.ackTimeout)
	defer timer.Stop()
	expired := false
	for k, i := range todo {
		f := futs[i]
		futs[i] = nil
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
				clear(futs)
				return append(left, todo[k:]...), rejected, ctx.Err(), rejErr
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
