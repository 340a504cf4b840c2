package natsx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"
)

// pullExpiry is how long one pull request waits at the server; the client
// expects a heartbeat every half of it and pulls again when one is missed.
const pullExpiry = 2 * time.Second

// fatalErr reports whether err, from the consumer, is one that waiting
// cannot cure.
func fatalErr(err error) bool {
	return errors.Is(err, jetstream.ErrConsumerDeleted) ||
		errors.Is(err, jetstream.ErrConsumerNotFound) ||
		errors.Is(err, jetstream.ErrStreamNotFound) ||
		errors.Is(err, jetstream.ErrBadRequest) ||
		errors.Is(err, jetstream.ErrConnectionClosed) ||
		errors.Is(err, nats.ErrConnectionClosed)
}

// consumption is one Read's pull consumption. nats.go's consume machinery
// calls deliver on its own goroutine, which hands each message to the
// reading goroutine through msgs, a channel of one batch.
type consumption struct {
	s    *Source
	cc   jetstream.ConsumeContext
	msgs chan jetstream.Msg
	errs chan error    // the latest error the consumer reported
	stop chan struct{} // closed when the reading goroutine takes no more
}

// consume starts pulling messages.
func (s *Source) consume() (*consumption, error) {
	c := &consumption{s: s, msgs: make(chan jetstream.Msg, s.cfg.batch), errs: make(chan error, 1), stop: make(chan struct{})}
	cc, err := s.cons.Consume(c.deliver,
		jetstream.PullMaxMessages(s.cfg.batch),
		jetstream.PullExpiry(pullExpiry),
		jetstream.ConsumeErrHandler(c.report))
	if err != nil {
		return nil, fmt.Errorf("natsx: source %s/%s: %w", s.stream, s.durable, err)
	}
	c.cc = cc
	return c, nil
}

func (c *consumption) deliver(m jetstream.Msg) {
	select {
	case c.msgs <- m:
	case <-c.stop:
		c.s.received.Add(1)
		c.s.handBack(m)
	}
}

// report keeps the latest error, replacing an older one not taken yet.
func (c *consumption) report(_ jetstream.ConsumeContext, err error) {
	for {
		select {
		case c.errs <- err:
			return
		default:
		}
		select {
		case <-c.errs:
		default:
		}
	}
}

// end stops the consumption, waits until deliver can no longer be called,
// and hands back what was received but not emitted.
func (c *consumption) end() {
	close(c.stop)
	if c.s.js.Conn().IsConnected() {
		// Drain, not Stop: Stop discards what nats.go has received and
		// not yet passed to deliver, which would then come back only
		// after AckWait; Drain passes it on, and deliver hands it back.
		c.cc.Drain()
	} else {
		c.cc.Stop() // a hand-back could not reach the server now
	}
	select {
	case <-c.cc.Closed():
	case <-time.After(5 * time.Second):
		// nats.go did not confirm the end of its subscription. What
		// deliver is given from now on is handed back, or, if it slips
		// into msgs after the loop below, comes back after AckWait.
	}
	for {
		select {
		case m := <-c.msgs:
			c.s.received.Add(1)
			c.s.handBack(m)
		default:
			return
		}
	}
}

// run is the source stage's generator: it emits what the consumption
// delivers, and, when nothing is ready, waits for a message or an event
// (an advisory, an error, an idle check, the end).
func (s *Source) run(ctx context.Context, out *sluice.Emitter[Msg]) error {
	c, err := s.consume()
	if err != nil {
		return err
	}
	defer c.end()
	if err := s.listen(s.js.Conn()); err != nil {
		return fmt.Errorf("natsx: source %s/%s: subscribing to max-deliveries advisories: %w", s.stream, s.durable, err)
	}
	defer s.unlisten()
	w := newWatch(s)
	defer w.idle.Stop()
	for {
		var m jetstream.Msg
		select {
		case m = <-c.msgs:
		case <-s.gaveUpCh:
			if err := s.handleGaveUp(ctx); err != nil {
				return err
			}
			continue
		default:
			var stop bool
			if m, stop, err = s.await(ctx, out, c, w); stop {
				return err
			}
			if m == nil {
				continue
			}
		}
		w.healthy = time.Now()
		if !s.emit(out, m) {
			return ctx.Err()
		}
	}
}

// await waits, flushed and shown as waiting for input rather than busy,
// for a message or an event, and handles the event. It returns a message
// to emit, or none, or stop with the run's result.
func (s *Source) await(ctx context.Context, out *sluice.Emitter[Msg], c *consumption, w *watch) (m jetstream.Msg, stop bool, err error) {
	w.idle.Reset(s.cfg.idleCheck)
	var cerr error
	var tick, stopped, gaveUp bool
	if !out.Await(func() {
		select {
		case m = <-c.msgs:
		case <-s.gaveUpCh:
			gaveUp = true
		case cerr = <-c.errs:
		case <-w.idle.C:
			tick = true
		case <-ctx.Done():
			stopped = true
		case <-out.Done(): // a drain: take nothing new
			stopped = true
		}
	}) || stopped {
		return nil, true, ctx.Err()
	}
	switch {
	case gaveUp:
		err := s.handleGaveUp(ctx)
		return nil, err != nil, err
	case cerr != nil:
		if fatalErr(cerr) {
			return nil, true, fmt.Errorf("natsx: source %s/%s: %w", s.stream, s.durable, cerr)
		}
		s.fetchErrs.Add(1)
		w.lastErr = cerr
		return nil, false, nil
	case tick:
		stop, err := w.check(ctx)
		return nil, stop, err
	}
	return m, false, nil // m is nil for a nil error report: nothing to deliver
}

// emit hands m to the pipeline with a receipt that settles it; if the
// pipeline stopped, it hands m back at once rather than after AckWait.
func (s *Source) emit(out *sluice.Emitter[Msg], m jetstream.Msg) bool {
	s.received.Add(1)
	key := s.pending.add(m)
	if out.Send(Msg{Receipt: sluice.NewReceipt(s, key), m: m, src: s, recv: nanotime()}) {
		return true
	}
	if m, ok := s.pending.take(key); ok {
		s.handBack(m)
	}
	return false
}
