package natsx

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"
)

// Source reads a JetStream stream through a durable pull consumer. Create
// one with [NewSource]; add it to a pipeline with [Read]. A Source may be
// read by several pipelines, in this process or others: they share the
// consumer's messages, each delivered to one of them.
type Source struct {
	js      jetstream.JetStream
	cons    jetstream.Consumer
	stream  string
	durable string
	cfg     sourceConfig

	// Tallies, each on its own cache line: delivered is written by the
	// reading goroutine, the others by whichever goroutines settle
	// messages (typically the sink's).
	delivered padded
	acked     padded
	naked     padded
	termed    padded
	fetchErrs padded
	gaveUp    padded // max-deliveries advisories seen
	deadLet   padded // messages published to the dead-letter subject

	st jetstream.Stream

	// Stream sequences of messages the server gave up on (MaxDeliver),
	// from the advisory subscription's goroutine to the reading one.
	gaveUpMu sync.Mutex
	gaveUpEv []gaveUpEvent
	gaveUpCh chan struct{} // cap 1: gaveUpSeq is not empty

	// The advisory subscription, one for all the Reads running at once:
	// each advisory is one message given up.
	advMu   sync.Mutex
	advSub  *nats.Subscription
	advRefs int
}

type padded struct {
	atomic.Int64
	_ [56]byte
}

// NewSource looks up stream and creates or updates the durable pull
// consumer named durable on it (or, with [Bind], looks the consumer up),
// so that a missing stream, a missing consumer, JetStream being off or an
// unreachable server is reported here, not later. Its requests are bounded
// by ctx, and by [DefaultStartTimeout] if ctx has no deadline.
//
// The consumer acknowledges explicitly and delivers every message the
// stream holds that no process has acknowledged yet.
func NewSource(ctx context.Context, js jetstream.JetStream, stream, durable string, opts ...SourceOption) (*Source, error) {
	if js == nil {
		panic("natsx: NewSource: nil JetStream")
	}
	if stream == "" || durable == "" {
		return nil, fmt.Errorf("natsx: source needs a stream and a durable consumer name, got %q and %q", stream, durable)
	}
	cfg := sourceOptions(opts)
	if !cfg.bind && cfg.batch > cfg.maxAckPending {
		return nil, fmt.Errorf("natsx: source %s/%s: FetchBatch %d exceeds MaxAckPending %d", stream, durable, cfg.batch, cfg.maxAckPending)
	}
	ctx, cancel := bounded(ctx, cfg.startTimeout)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("natsx: source stream %q: %w", stream, explain(err))
	}
	var cons jetstream.Consumer
	if cfg.bind {
		cons, err = js.Consumer(ctx, stream, durable)
	} else {
		cons, err = js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
			Durable:       durable,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       cfg.ackWait,
			MaxAckPending: cfg.maxAckPending,
			MaxDeliver:    cfg.maxDeliver,
			FilterSubject: cfg.filter,
			DeliverPolicy: jetstream.DeliverAllPolicy,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("natsx: source consumer %q on stream %q: %w", durable, stream, explain(err))
	}
	if ci := cons.CachedInfo(); ci != nil && ci.Config.AckPolicy != jetstream.AckExplicitPolicy {
		return nil, fmt.Errorf("natsx: source consumer %q on stream %q acknowledges with policy %v; it must be explicit", durable, stream, ci.Config.AckPolicy)
	}
	if ci := cons.CachedInfo(); ci != nil && cfg.deadSubject != "" && ci.Config.MaxDeliver > 0 && cfg.deadAfter > ci.Config.MaxDeliver {
		return nil, fmt.Errorf("natsx: source %s/%s: DeadLetter after %d deliveries, but MaxDeliver is %d: the server would give up first",
			stream, durable, cfg.deadAfter, ci.Config.MaxDeliver)
	}
	return &Source{js: js, st: st, cons: cons, stream: stream, durable: durable, cfg: cfg, gaveUpCh: make(chan struct{}, 1)}, nil
}

// bounded gives ctx a deadline d from now unless it has one.
func bounded(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// explain adds what a bare error from nats.go leaves out.
func explain(err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("no answer from the server in time (is JetStream enabled and the server reachable?): %w", err)
	case errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled),
		errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return fmt.Errorf("JetStream is not enabled on the server for this account: %w", err)
	}
	return err
}

// Read starts a source stage that emits the messages of src until the
// pipeline stops (or, with [UntilDrained], until the consumer is drained).
// Every message must be settled exactly once — [Msg.Ack] after its result
// is committed ([Publish] does this for the messages it stores), or
// [Msg.Fail], [Msg.Nak] or [Msg.Term] — otherwise the server delivers it
// again after AckWait.
//
// The stage's goroutine emits messages as nats.go's consumer delivers them
// (a pull request of [FetchBatch] messages is always outstanding), and
// hands what it has downstream whenever no further message is ready, so a
// trickle is not held back and a flood travels in full chunks. How many
// messages are in flight is bounded by the consumer's [MaxAckPending]. The
// stage fails when the consumer or stream is deleted, the connection is
// closed, or the server has been unreachable for [MaxOutage]; a reconnect
// or a server restart is waited out. The stage also subscribes to the
// server's max-deliveries advisories for its consumer: a message the server
// stopped delivering is dead-lettered ([DeadLetter]) or fails the stage.
// When it stops, messages it received
// but did not emit are handed back at once ([Msg.Nak]); those inside the
// stopped pipeline come back after AckWait.
func Read(p *sluice.Pipeline, name string, src *Source, opts ...sluice.StageOption) sluice.Stream[Msg] {
	if src == nil {
		panic(fmt.Sprintf("natsx: Read %q: nil Source", name))
	}
	return sluice.From(p, name, src.run, opts...)
}

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

// pullExpiry is how long one pull request waits at the server; the client
// expects a heartbeat every half of it and pulls again when one is missed.
const pullExpiry = 2 * time.Second

// run is the source stage's generator. nats.go's consume machinery calls
// deliver on its own goroutine, which hands each message to run's
// goroutine through a channel of one batch; run emits it. At the end run
// stops the consumption, waits until deliver can no longer be called, and
// hands back (naks) what it received but did not emit.
func (s *Source) run(ctx context.Context, out *sluice.Emitter[Msg]) error {
	msgs := make(chan jetstream.Msg, s.cfg.batch)
	errs := make(chan error, 1) // the latest error the consumer reported
	stop := make(chan struct{})
	deliver := func(m jetstream.Msg) {
		select {
		case msgs <- m:
		case <-stop:
			s.delivered.Add(1)
			if m.Nak() == nil {
				s.naked.Add(1)
			}
		}
	}
	report := func(_ jetstream.ConsumeContext, err error) {
		for {
			select {
			case errs <- err:
				return
			default:
			}
			select { // replace the older error
			case <-errs:
			default:
			}
		}
	}
	cc, err := s.cons.Consume(deliver,
		jetstream.PullMaxMessages(s.cfg.batch),
		jetstream.PullExpiry(pullExpiry),
		jetstream.ConsumeErrHandler(report))
	if err != nil {
		return fmt.Errorf("natsx: source %s/%s: %w", s.stream, s.durable, err)
	}
	defer func() {
		close(stop)
		if s.js.Conn().IsConnected() {
			// Drain, not Stop: Stop discards what nats.go has received
			// and not yet passed to deliver, which would then come back
			// only after AckWait; Drain passes it on, and deliver hands
			// it back.
			cc.Drain()
		} else {
			cc.Stop() // a hand-back could not reach the server now
		}
		select {
		case <-cc.Closed():
		case <-time.After(5 * time.Second):
			// nats.go did not confirm the end of its subscription. What
			// deliver is given from now on is naked, or, if it slips into
			// msgs after the loop below, comes back after AckWait.
		}
		for {
			select {
			case m := <-msgs:
				s.delivered.Add(1)
				if m.Nak() == nil {
					s.naked.Add(1)
				}
			default:
				return
			}
		}
	}()

	nc := s.js.Conn()
	if err := s.listen(nc); err != nil {
		return fmt.Errorf("natsx: source %s/%s: subscribing to max-deliveries advisories: %w", s.stream, s.durable, err)
	}
	defer s.unlisten()
	idle := time.NewTimer(s.cfg.idleCheck)
	defer idle.Stop()
	healthy := time.Now() // last time the server was known to be there
	var lastErr error
	for {
		var m jetstream.Msg
		select {
		case m = <-msgs:
		case <-s.gaveUpCh:
			if err := s.handleGaveUp(ctx); err != nil {
				return err
			}
			continue
		default:
			// Nothing delivered yet: flush, and show the stage as
			// waiting for input (not busy) while it waits.
			idle.Reset(s.cfg.idleCheck)
			var err error
			var tick, stopped, gaveUp bool
			if !out.Await(func() {
				select {
				case m = <-msgs:
				case <-s.gaveUpCh:
					gaveUp = true
				case err = <-errs:
				case <-idle.C:
					tick = true
				case <-ctx.Done():
					stopped = true
				case <-out.Done(): // a drain: take nothing new
					stopped = true
				}
			}) || stopped {
				return ctx.Err()
			}
			switch {
			case gaveUp:
				if err := s.handleGaveUp(ctx); err != nil {
					return err
				}
				continue
			case err != nil:
				if fatalErr(err) {
					return fmt.Errorf("natsx: source %s/%s: %w", s.stream, s.durable, err)
				}
				s.fetchErrs.Add(1)
				lastErr = err
				continue
			case tick:
				if nc.IsConnected() && lastErr == nil {
					healthy = time.Now()
				}
				lastErr = nil
				if s.cfg.maxOutage > 0 && time.Since(healthy) > s.cfg.maxOutage {
					return fmt.Errorf("natsx: source %s/%s: no connection to the server for %v (status %v)", s.stream, s.durable, s.cfg.maxOutage, nc.Status())
				}
				if s.cfg.untilDrained && s.inFlight() == 0 {
					// An error here (the server is restarting, say) only
					// means asking again at the next idle check; a lasting
					// outage is caught above.
					if done, err := s.drained(ctx); err == nil && done {
						return nil
					}
				}
				continue
			case m == nil: // a nil error report: nothing to deliver
				continue
			}
		}
		s.delivered.Add(1)
		healthy = time.Now()
		if !out.Send(Msg{m: m, src: s, recv: nanotime()}) {
			// The pipeline stopped: m will not be processed, so hand
			// it back now rather than after AckWait.
			if m.Nak() == nil {
				s.naked.Add(1)
			}
			return ctx.Err()
		}
	}
}

// listen subscribes to the consumer's max-deliveries advisories unless a
// running Read of s has already; unlisten undoes it when the last one ends.
func (s *Source) listen(nc *nats.Conn) error {
	s.advMu.Lock()
	defer s.advMu.Unlock()
	if s.advRefs == 0 {
		sub, err := nc.Subscribe(maxDeliveriesAdvisory+s.stream+"."+s.durable, s.onGaveUp)
		if err != nil {
			return err
		}
		s.advSub = sub
	}
	s.advRefs++
	return nil
}

func (s *Source) unlisten() {
	s.advMu.Lock()
	defer s.advMu.Unlock()
	if s.advRefs--; s.advRefs == 0 {
		_ = s.advSub.Unsubscribe()
		s.advSub = nil
	}
}

// drained reports whether the consumer has nothing left to deliver and
// nothing delivered but unsettled.
func (s *Source) drained(ctx context.Context) (bool, error) {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ci, err := s.cons.Info(ictx)
	if err != nil {
		return false, err
	}
	return ci.NumPending == 0 && ci.NumAckPending == 0 && s.inFlight() == 0, nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Source) inFlight() int64 {
	return s.delivered.Load() - s.acked.Load() - s.naked.Load() - s.termed.Load()
}

// SourceStats counts what a [Source] has done since it was created.
type SourceStats struct {
	Delivered    int64 // messages fetched and handed to the pipeline (or handed back at a stop)
	Acked        int64 // acknowledged
	Naked        int64 // negatively acknowledged, to be delivered again
	Termed       int64 // terminated, never to be delivered again
	InFlight     int64 // delivered and not settled yet
	Errors       int64 // errors the consumer reported and recovered from (missed heartbeats, reconnects)
	GaveUp       int64 // messages the server stopped delivering (MaxDeliver), from its advisories
	DeadLettered int64 // messages published to the DeadLetter subject
}

// Stats returns the source's counts. It is safe to call at any time.
func (s *Source) Stats() SourceStats {
	st := SourceStats{
		Delivered:    s.delivered.Load(),
		Acked:        s.acked.Load(),
		Naked:        s.naked.Load(),
		Termed:       s.termed.Load(),
		Errors:       s.fetchErrs.Load(),
		GaveUp:       s.gaveUp.Load(),
		DeadLettered: s.deadLet.Load(),
	}
	st.InFlight = st.Delivered - st.Acked - st.Naked - st.Termed
	return st
}

// Consumer returns the durable consumer the source reads.
func (s *Source) Consumer() jetstream.Consumer { return s.cons }

// Msg is one message delivered by a [Source], with the handle that
// settles it. It is a small value: carry it along with what is derived
// from it, and settle it once that result is committed. The zero Msg is
// not a message: settling it does nothing, and its accessors return zero
// values. Settling a message already settled returns an error matching
// [jetstream.ErrMsgAlreadyAckd] and does nothing else.
type Msg struct {
	m    jetstream.Msg
	src  *Source
	recv int64 // nanotime when it was fetched
}

// Data returns the message's payload (nil for the zero Msg). It must not
// be modified.
func (m Msg) Data() []byte {
	if m.m == nil {
		return nil
	}
	return m.m.Data()
}

// Subject returns the subject the message was published to ("" for the
// zero Msg).
func (m Msg) Subject() string {
	if m.m == nil {
		return ""
	}
	return m.m.Subject()
}

// Header returns the message's headers (nil when it has none).
func (m Msg) Header() nats.Header {
	if m.m == nil {
		return nil
	}
	return m.m.Headers()
}

// IsZero reports whether m is the zero Msg.
func (m Msg) IsZero() bool { return m.m == nil }

// Received returns when the source fetched the message.
func (m Msg) Received() time.Time { return epoch.Add(time.Duration(m.recv)) }

// Metadata returns the message's stream sequence, delivery count and
// timestamps, parsed from its reply subject. The zero Msg has none: it
// returns an error.
func (m Msg) Metadata() (*jetstream.MsgMetadata, error) {
	if m.m == nil {
		return nil, errZeroMsg
	}
	return m.m.Metadata()
}

var errZeroMsg = errors.New("natsx: the zero Msg is not a message")

// ID returns a stable identity for the message: its Nats-Msg-Id header if
// it has one, else "<stream>:<stream sequence>". It is the same on every
// delivery of the message, so it makes a good Nats-Msg-Id for the one
// message derived from it ([Out].ID): a redelivered message then produces
// a duplicate that the server discards. The zero Msg's ID is "".
func (m Msg) ID() string {
	if m.m == nil {
		return ""
	}
	if h := m.m.Headers(); h != nil {
		if id := h.Get(jetstream.MsgIDHeader); id != "" {
			return id
		}
	}
	md, err := m.m.Metadata()
	if err != nil {
		return ""
	}
	return md.Stream + ":" + strconv.FormatUint(md.Sequence.Stream, 10)
}

// Ack acknowledges the message: the server will not deliver it again. Call
// it only once the result derived from the message is committed.
func (m Msg) Ack() error {
	if m.m == nil {
		return nil
	}
	err := m.m.Ack()
	if err == nil {
		m.src.acked.Add(1)
	}
	return err
}

// Nak negatively acknowledges the message: the server delivers it again
// after delay (at once if delay is 0), to this process or another.
func (m Msg) Nak(delay time.Duration) error {
	if m.m == nil {
		return nil
	}
	var err error
	if delay > 0 {
		err = m.m.NakWithDelay(delay)
	} else {
		err = m.m.Nak()
	}
	if err == nil {
		m.src.naked.Add(1)
	}
	return err
}

// Term terminates the message: the server never delivers it again. reason
// appears in the server's advisory.
func (m Msg) Term(reason string) error {
	if m.m == nil {
		return nil
	}
	err := m.m.TermWithReason(reason)
	if err == nil {
		m.src.termed.Add(1)
	}
	return err
}

// Fail settles a message whose processing failed with cause, as the source
// was configured to: by [NakOnFail] (the default: delivered again after a
// delay) or by [TermOnFail].
//
// With [DeadLetter], a message on its configured delivery or later is
// published to the dead-letter subject and terminated instead; if that
// publish fails, it is naked (tried again later) and Fail returns the
// error.
func (m Msg) Fail(cause error) error {
	if m.m == nil {
		return nil
	}
	if c := &m.src.cfg; c.deadSubject != "" {
		if md, err := m.m.Metadata(); err == nil && int(md.NumDelivered) >= c.deadAfter {
			return m.deadLetter(cause)
		}
	}
	if m.src.cfg.failTerm {
		reason := "failed"
		if cause != nil {
			reason = cause.Error()
		}
		return m.Term(reason)
	}
	return m.Nak(m.src.cfg.nakDelay)
}

// InProgress tells the server the message is still being worked on,
// restarting its AckWait.
func (m Msg) InProgress() error {
	if m.m == nil {
		return nil
	}
	return m.m.InProgress()
}

var epoch = time.Now()

// nanotime is monotonic time since epoch.
func nanotime() int64 { return int64(time.Since(epoch)) }
