package natsx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"
)

// whole is the error of a write none of whose messages was stored, or
// whose context ended (err).
func whole(msgs []nats.Msg, fs []failure, err error) error {
	var rejected, left []failure
	for _, f := range fs {
		if f.rejected {
			rejected = append(rejected, f)
		} else {
			left = append(left, f)
		}
	}
	var errs []error
	if len(rejected) > 0 {
		errs = append(errs, fmt.Errorf("natsx: the server rejected %d of %d messages, e.g. one to %q: %w",
			len(rejected), len(msgs), msgs[rejected[0].i].Subject, rejected[0].cause))
	}
	if err != nil {
		return errors.Join(append([]error{err}, errs...)...)
	}
	if len(left) > 0 {
		return errors.Join(append(errs, fmt.Errorf("natsx: %d of %d messages not stored, e.g. one to %q: %w",
			len(left), len(msgs), msgs[left[0].i].Subject, left[0].cause))...)
	}
	return sluice.Permanent(errs[0])
}

// messages returns the messages to send for the n items of parts, in
// order.
func (s *Sink) messages(parts [][]Out, n int) []nats.Msg {
	msgs := make([]nats.Msg, 0, n)
	for _, batch := range parts {
		for i := range batch {
			o := &batch[i]
			h := o.Header
			var tc context.Context // the trace context to inject, if any
			if s.cfg.Propagator != nil {
				tc = o.From.Trace()
			}
			if o.ID != "" || s.cfg.stream != "" || tc != nil {
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
				if tc != nil {
					s.cfg.Propagator.Inject(tc, HeaderCarrier(h))
				}
			}
			msgs = append(msgs, nats.Msg{Subject: o.Subject, Data: o.Data, Header: h})
		}
	}
	return msgs
}

// logSent counts the messages of a write that were not stored, fs; a
// write that stored all writes what the tally holds once its interval
// has passed.
func (s *Sink) logSent(msgs []nats.Msg, fs []failure) {
	if len(fs) == 0 {
		s.fails.FlushDue()
		return
	}
	f := fs[len(fs)-1]
	s.fails.Add(int64(len(fs)), slog.String("subject", msgs[f.i].Subject), s.log.err(f.cause))
}

// failure is a message a write did not store: its index, why (cause),
// and the error that says so for it alone.
type failure struct {
	i        int
	rejected bool // by the server or the client: no use sending it again
	cause    error
	err      error
}

// send publishes msgs and waits for the server's answers, up to the ack
// timeout. It returns the messages not stored, counted in the sink's
// stats, and ctx's error if it ended first (the messages not answered by
// then are among the failures).
func (s *Sink) send(ctx context.Context, msgs []nats.Msg) (fs []failure, _ error) {
	fail := func(i int, err error) {
		f := failure{i: i, cause: err, rejected: permanent(err)}
		if f.rejected {
			f.err = sluice.Permanent(fmt.Errorf("natsx: the server rejected the message to %q: %w", msgs[i].Subject, err))
		} else {
			f.err = fmt.Errorf("natsx: message to %q not stored: %w", msgs[i].Subject, err)
		}
		fs = append(fs, f)
	}
	defer func() {
		s.published.Add(int64(len(msgs) - len(fs)))
		s.failed.Add(int64(len(fs)))
		for _, f := range fs {
			if f.rejected {
				s.rejected.Add(1)
			}
		}
		if s.log != nil {
			s.logSent(msgs, fs)
		}
	}()
	w := s.pub.publish(msgs)
	timer := time.NewTimer(s.cfg.ackTimeout)
	defer timer.Stop()
	var ctxErr error
	select {
	case <-w.done:
	case <-timer.C:
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	// Take what has arrived; wait no more.
	errs, got := s.pub.finish(w)
	unanswered := ctxErr
	for i, err := range errs {
		switch {
		case !got[i]:
			if unanswered == nil {
				unanswered = fmt.Errorf("no acknowledgement from the server within %v", s.cfg.ackTimeout)
			}
			fail(i, unanswered)
		case err != nil:
			fail(i, err)
		}
	}
	return fs, ctxErr
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
