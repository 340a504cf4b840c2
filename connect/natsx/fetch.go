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

// reader is a source's fetch loop: it emits the messages its consumer
// delivers, each with a receipt that the source settles, and resolves the
// advisories of messages the server gave up on first. One Read runs it at
// a time.
type reader struct {
	src     *Source // the receipts' Settler
	js      jetstream.JetStream
	cons    jetstream.Consumer
	cfg     *sourceConfig
	adv     *giveUps // nil without a bound on deliveries
	acks    *acker
	n       *sourceCounts
	log     *sourceLog
	stream  string
	durable string
}

// consumption is one Read's pull consumption of a consumer: the source's
// own, or the one of its max-deliveries advisories. nats.go's consume
// machinery calls deliver on its own goroutine, which hands each message
// to the reading goroutine through msgs, a channel of one batch.
type consumption struct {
	nc   *nats.Conn
	cc   jetstream.ConsumeContext
	msgs chan jetstream.Msg
	errs chan error            // the latest error the consumer reported
	stop chan struct{}         // closed when the reading goroutine takes no more
	back func(m jetstream.Msg) // hands back a message received and not taken
}

// consume starts pulling messages of cons, batch at a time; back hands
// back those the reading goroutine does not take.
func (r *reader) consume(cons jetstream.Consumer, batch int, back func(jetstream.Msg)) (*consumption, error) {
	c := &consumption{nc: r.js.Conn(), msgs: make(chan jetstream.Msg, batch), errs: make(chan error, 1), stop: make(chan struct{}), back: back}
	cc, err := cons.Consume(c.deliver,
		jetstream.PullMaxMessages(batch),
		jetstream.PullExpiry(pullExpiry),
		jetstream.ConsumeErrHandler(c.report))
	if err != nil {
		return nil, err
	}
	c.cc = cc
	return c, nil
}

func (c *consumption) deliver(m jetstream.Msg) {
	select {
	case c.msgs <- m:
	case <-c.stop:
		c.back(m)
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
// and hands back what was received but not taken.
func (c *consumption) end() {
	close(c.stop)
	if c.nc.IsConnected() {
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
			c.back(m)
		default:
			return
		}
	}
}

// run is the source stage's generator: it resolves the max-deliveries
// advisories it is handed, first, and emits what the consumption
// delivers; when nothing is ready, it waits for a message or an event (an
// advisory, an error, an idle check, the end). When it returns, the
// consumption hands back the messages received and not emitted, and the
// advisories received and not resolved. o, if not nil, logs outages.
func (r *reader) run(ctx context.Context, out *sluice.Emitter[Msg], o *outage) error {
	var adv *consumption // nil without a bound on deliveries: the server gives up on nothing
	if r.adv != nil {
		if err := r.adv.resolveStored(ctx); err != nil {
			return err
		}
		var err error
		adv, err = r.consume(r.adv.cons, advisoryBatch, func(a jetstream.Msg) { _ = a.Nak() })
		if err != nil {
			return fmt.Errorf("natsx: source %s/%s: reading the server's max-deliveries advisories: %w", r.stream, r.durable, err)
		}
		defer adv.end()
	}
	c, err := r.consume(r.cons, r.cfg.batch, func(m jetstream.Msg) {
		r.n.received.Add(1)
		r.acks.handBack(m)
	})
	if err != nil {
		return fmt.Errorf("natsx: source %s/%s: %w", r.stream, r.durable, err)
	}
	defer c.end()
	w := newWatch(r, adv, o)
	defer w.idle.Stop()
	for {
		var m jetstream.Msg
		select {
		case a := <-w.advMsgs:
			// Resolved before the next message: a run that fails on a
			// poison message resolves what the server gave up on first.
			if err := r.adv.resolve(ctx, takeReady([]jetstream.Msg{a}, w.advMsgs)); err != nil {
				return err
			}
			continue
		default:
		}
		select {
		case m = <-c.msgs:
		default:
			var stop bool
			if m, stop, err = r.await(ctx, out, c, w); stop {
				return err
			}
			if m == nil {
				continue
			}
		}
		w.healthy = time.Now()
		w.caughtAt = time.Time{}
		w.outage.up()
		if !r.emit(out, m) {
			return ctx.Err()
		}
	}
}

// await waits, flushed and shown as waiting for input rather than busy,
// for a message or an event, and handles the event. It returns a message
// to emit, or none, or stop with the run's result.
func (r *reader) await(ctx context.Context, out *sluice.Emitter[Msg], c *consumption, w *watch) (m jetstream.Msg, stop bool, err error) {
	w.idle.Reset(r.cfg.idleCheck)
	var a jetstream.Msg
	var cerr, aerr error
	var tick, stopped bool
	if !out.Await(func() {
		select {
		case m = <-c.msgs:
		case a = <-w.advMsgs:
		case cerr = <-c.errs:
		case aerr = <-w.advErrs:
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
	case a != nil:
		w.caughtAt = time.Time{}
		err := r.adv.resolve(ctx, takeReady([]jetstream.Msg{a}, w.advMsgs))
		return nil, err != nil, err
	case cerr != nil:
		if fatalErr(cerr) {
			return nil, true, fmt.Errorf("natsx: source %s/%s: %w", r.stream, r.durable, cerr)
		}
		r.n.fetchErrs.Add(1)
		w.lastErr = cerr
		w.outage.down(cerr)
		return nil, false, nil
	case aerr != nil:
		if fatalErr(aerr) {
			return nil, true, fmt.Errorf("natsx: source %s/%s: reading the server's max-deliveries advisories: %w", r.stream, r.durable, aerr)
		}
		r.n.fetchErrs.Add(1)
		w.lastErr = aerr
		w.outage.down(aerr)
		return nil, false, nil
	case tick:
		stop, err := w.check(ctx)
		return nil, stop, err
	}
	return m, false, nil // m is nil for a nil error report: nothing to deliver
}

// emit hands m to the pipeline with a receipt that settles it; if the
// pipeline stopped, it hands m back at once rather than after AckWait.
func (r *reader) emit(out *sluice.Emitter[Msg], m jetstream.Msg) bool {
	r.n.received.Add(1)
	if md, err := m.Metadata(); err == nil && md.NumDelivered > 1 {
		r.n.redelivered.Add(1)
	}
	key := r.acks.pending.add(m)
	rc := sluice.NewReceipt(r.src, key)
	if r.cfg.Propagator != nil {
		if tc := extract(r.cfg.Propagator, m.Headers()); tc != nil {
			rc = rc.WithTrace(tc)
		}
	}
	if out.Send(Msg{Receipt: rc, m: m, src: r.src, recv: nanotime()}) {
		return true
	}
	if m, ok := r.acks.pending.take(key); ok {
		r.acks.handBack(m)
	}
	return false
}
