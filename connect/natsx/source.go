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

// Source reads a JetStream stream through a durable pull consumer and
// settles its messages: it is the [sluice.Settler] of the receipts its
// messages carry. Create one with [NewSource]; add it to a pipeline with
// [Read]. A Source may be read by several pipelines, in this process or
// others: they share the consumer's messages, each delivered to one of
// them.
type Source struct {
	js      jetstream.JetStream
	cons    jetstream.Consumer
	stream  string
	durable string
	cfg     sourceConfig

	rd     reader       // the fetch loop (fetch.go, flow.go)
	acks   acker        // in-flight messages and their acks, naks and terms (settle.go)
	park   parker       // the dead-letter path (deadletter.go)
	adv    *giveUps     // the server's give-ups (advisory.go); nil when it gives up on nothing
	log    sourceLog    // the Logger's lines and tallies (sourcelog.go)
	counts sourceCounts // what Stats reports (stats.go)
}

// NewSource looks up stream and creates or updates the durable pull
// consumer named durable on it (or, with [Bind], looks the consumer up),
// so that a missing stream, a missing consumer, JetStream being off or an
// unreachable server is reported here, not later. Its requests are bounded
// by ctx, and by [DefaultStartTimeout] if ctx has no deadline.
//
// The consumer acknowledges explicitly and delivers every message the
// stream holds that no process has acknowledged yet.
//
// When the consumer bounds deliveries ([Redeliver], or its own
// MaxDeliver with [Bind]), NewSource also makes the server keep its
// advisories about messages it stops delivering, so that none is missed
// for want of a Read listening (see [Read]): in the stream that already
// holds their subject,
// $JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<durable>, if one
// does, or else in a stream NATSX_GAVEUP_<stream> it creates (work-queue
// retention, the storage and replicas of stream); and it creates or
// updates the durable consumer natsx_gaveup_<length of stream>_<stream>_<durable>
// on that stream, through which Reads take them. The credentials must
// allow both, or the stream must exist already. When it creates the
// consumer (none of that name existed), it drops from NATSX_GAVEUP_<stream>
// the advisories stored about an earlier consumer of that name.
func NewSource(ctx context.Context, js jetstream.JetStream, stream, durable string, opts ...SourceOption) (*Source, error) {
	if js == nil {
		panic("natsx: NewSource: nil JetStream")
	}
	if stream == "" || durable == "" {
		return nil, fmt.Errorf("natsx: source needs a stream and a durable consumer name, got %q and %q", stream, durable)
	}
	cfg := sourceOptions(opts)
	if !cfg.bind && cfg.batch > cfg.maxInFlight {
		return nil, fmt.Errorf("natsx: source %s/%s: FetchBatch %d exceeds MaxInFlight %d", stream, durable, cfg.batch, cfg.maxInFlight)
	}
	ctx, cancel := bounded(ctx, cfg.startTimeout)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("natsx: source stream %q: %w", stream, explain(err))
	}
	// The advisories are kept before the consumer is created, so that
	// none about it is missed, and those about an earlier consumer of the
	// same name can be told apart (see keepAdvisories).
	var keeper *advisoryKeeper
	if !cfg.bind && cfg.maxDeliver > 0 {
		if keeper, err = keepAdvisories(ctx, js, st, stream, durable, true); err != nil {
			return nil, advisoryErr(stream, durable, err)
		}
	}
	var cons jetstream.Consumer
	if cfg.bind {
		cons, err = js.Consumer(ctx, stream, durable)
	} else {
		cons, err = js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
			Durable:       durable,
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       cfg.ackWait,
			MaxAckPending: cfg.maxInFlight,
			MaxDeliver:    cfg.maxDeliver,
			FilterSubject: cfg.filter,
			DeliverPolicy: jetstream.DeliverAllPolicy,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("natsx: source consumer %q on stream %q: %w", durable, stream, explain(err))
	}
	maxDeliver := cfg.maxDeliver
	if ci := cons.CachedInfo(); ci != nil {
		if ci.Config.AckPolicy != jetstream.AckExplicitPolicy {
			return nil, fmt.Errorf("natsx: source consumer %q on stream %q acknowledges with policy %v; it must be explicit", durable, stream, ci.Config.AckPolicy)
		}
		maxDeliver = ci.Config.MaxDeliver
	}
	if cfg.deadSubject != "" && maxDeliver <= 0 {
		return nil, fmt.Errorf("natsx: source %s/%s: DeadLetterTo needs a bound on deliveries (Redeliver's max, or the consumer's MaxDeliver): without one a failing message is delivered again forever", stream, durable)
	}
	s := newSource(js, st, cons, stream, durable, cfg, maxDeliver)
	if maxDeliver > 0 {
		if keeper == nil { // Bind: the consumer exists already
			if keeper, err = keepAdvisories(ctx, js, st, stream, durable, false); err != nil {
				return nil, advisoryErr(stream, durable, err)
			}
		}
		advCons, err := keeper.consumer(ctx, js, stream, durable)
		if err != nil {
			return nil, advisoryErr(stream, durable, err)
		}
		s.adv = &giveUps{cons: advCons, park: &s.park, stream: stream, durable: durable, n: &s.counts, log: &s.log}
		s.rd.adv = s.adv
	}
	s.log.ready(s)
	return s, nil
}

// newSource composes a source of its parts, with no give-ups to resolve
// yet.
func newSource(js jetstream.JetStream, st jetstream.Stream, cons jetstream.Consumer, stream, durable string, cfg sourceConfig, maxDeliver int) *Source {
	s := &Source{js: js, cons: cons, stream: stream, durable: durable, cfg: cfg}
	s.log = newSourceLog(cfg.Logger, js.Conn(), stream, durable)
	s.park = parker{js: js, st: st, subject: cfg.deadSubject, stream: stream, durable: durable, n: &s.counts, log: &s.log}
	s.acks = acker{maxDeliver: maxDeliver, delay: cfg.redeliverDelay, park: &s.park, n: &s.counts, log: &s.log}
	s.rd = reader{src: s, js: js, cons: cons, cfg: &s.cfg, acks: &s.acks, n: &s.counts, log: &s.log, stream: stream, durable: durable}
	return s
}

func advisoryErr(stream, durable string, err error) error {
	return fmt.Errorf("natsx: source %s/%s: keeping the server's max-deliveries advisories: %w", stream, durable, explain(err))
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
// pipeline stops (or, with [StopWhenCaughtUp], until the consumer has
// nothing left). Each [Msg] carries a receipt that the pipeline settles
// (see [Msg]); a message not settled is delivered again after AckWait.
// The source's counts ([Source.Stats]) are the stage's
// [sluice.StageStats].Connector, so an exporter of the pipeline shows them
// (the sluice.nats.source metrics).
//
// The stage's goroutine emits messages as nats.go's consumer delivers them
// (a pull request of [FetchBatch] messages is always outstanding), and
// hands what it has downstream whenever no further message is ready, so a
// trickle is not held back and a flood travels in full chunks. How many
// messages are in flight is bounded by [MaxInFlight]. The stage fails
// when the consumer or stream is deleted, the connection is closed, or
// the server has been unreachable for [MaxOutage]; a reconnect or a
// server restart is waited out.
//
// With a bound on deliveries, the stage also reads the advisories the
// source keeps about messages the server stopped delivering (see
// [NewSource]), and resolves each before it emits another message: the
// message is dead-lettered ([DeadLetterTo]; a round trip to fetch it from
// the stream and one to store it), or, without a dead-letter subject, the
// stage fails with an error naming the stream sequence of every such
// message at hand. Advisories stored before the stage started (the server
// gave up while no Read ran, or a stopped Read handed them back) are
// resolved before it pulls its first message.
//
// When it stops, messages it received but did not emit are handed back
// at once (naked), and so are advisories it received but did not
// resolve; messages inside the stopped pipeline come back after AckWait.
// A message handed back on its last delivery is one the server gives up
// on (at the next pull request of a Read of the consumer), and a Read,
// that one or a later one, resolves its advisory.
func Read(p *sluice.Pipeline, name string, src *Source, opts ...sluice.StageOption) sluice.Stream[Msg] {
	if src == nil {
		panic(fmt.Sprintf("natsx: Read %q: nil Source", name))
	}
	pipeline := p.Name()
	msgs := sluice.From(p, name, func(ctx context.Context, out *sluice.Emitter[Msg]) error {
		if src.log.log == nil {
			return src.rd.run(ctx, out, nil)
		}
		return src.loggedRun(ctx, out, pipeline, name)
	}, opts...)
	src.attach(p, name)
	return msgs
}

// Consumer returns the durable consumer the source reads.
func (s *Source) Consumer() jetstream.Consumer { return s.cons }
