package natsx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The server announces each message it stops delivering (its consumer's
// MaxDeliver reached, the last delivery unsettled) once, on a subject of
// its own, to whoever listens at that moment (with no one listening, it
// does not send the advisory at all). It gives up at moments no
// Read controls: when an AckWait expires, possibly with no Read running;
// on the first pull request after a message was naked on its last
// delivery, possibly a pull left waiting by a Read that is stopping or
// the first of the next Read. A subscription held while a Read runs
// misses the announcements made between Reads and races a Read's start
// and end; and the server's consumer state does not say which messages
// it gave up on (its ack floor passes them as it passes acknowledged
// ones). So the source keeps the announcements in a stream, as JetStream
// allows for any advisory: the server stores each one whether or not a
// Read runs, a Read reads them through a durable consumer of its own and
// acknowledges each only once it is resolved (dead-lettered, or reported
// by the error that ends the run), and one not resolved, whichever way a
// Read ends, is read by the next Read, in this process or another.

// maxDeliveriesAdvisory is the subject prefix of the server's advisories
// about messages it stopped delivering; <stream>.<consumer> follows.
const maxDeliveriesAdvisory = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."

// advisoryStreamPrefix names the stream a source creates for the
// advisories of a stream's consumers when no stream holds them yet.
const advisoryStreamPrefix = "NATSX_GAVEUP_"

// advisoryBatch is how many advisories one pull request asks for: few,
// since each may take a dead-letter round trip before it is acknowledged.
const advisoryBatch = 16

// advisoryAckWait is how long a Read may hold an advisory before the
// server hands it to another Read: a dead letter takes at most two
// bounded requests per advisory.
const advisoryAckWait = time.Minute

// advisoryWindow bounds the time between the server giving up on a
// message (the moment the consumer stops counting it as pending) and the
// advisory being stored: the server queues the advisory first and stores
// it through its internal queues, within microseconds on a healthy
// server. StopWhenCaughtUp waits this long, with nothing delivered
// meanwhile, before it trusts an empty advisory consumer; an advisory
// stored later still is resolved by the next Read.
const advisoryWindow = 200 * time.Millisecond

// advisoryKeeper is where the advisories of one consumer are kept.
type advisoryKeeper struct {
	st      jetstream.Stream // the stream that keeps them
	subject string           // theirs: the prefix, then <stream>.<durable>
	ours    bool             // st is the NATSX_GAVEUP_ stream a source made
	fresh   bool             // the consumer did not exist when the keeper was made
	stale   uint64           // with fresh: st's last sequence before that lookup
}

// keepAdvisories makes sure the max-deliveries advisories of consumer
// durable on stream are stored: in the stream that already holds their
// subject, or in a stream NATSX_GAVEUP_<stream> it creates, with stream
// st's storage and replicas. With lookup, it then notes whether the
// consumer exists yet: if NewSource is about to create it, the advisories
// stored until now are about an earlier consumer of that name (deleted,
// or deleted with its stream), whose stream sequences are not the new
// one's, and [advisoryKeeper.consumer] drops them.
func keepAdvisories(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, stream, durable string, lookup bool) (*advisoryKeeper, error) {
	k := &advisoryKeeper{subject: maxDeliveriesAdvisory + stream + "." + durable}
	name, err := js.StreamNameBySubject(ctx, k.subject)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		name = advisoryStreamPrefix + stream
		cfg := jetstream.StreamConfig{
			Name:        name,
			Description: "natsx: the max-deliveries advisories of the consumers of stream " + stream,
			Subjects:    []string{maxDeliveriesAdvisory + stream + ".*"},
			// Each advisory is kept until a Read resolves it.
			Retention: jetstream.WorkQueuePolicy,
			Storage:   jetstream.FileStorage,
		}
		if si := st.CachedInfo(); si != nil {
			cfg.Storage, cfg.Replicas = si.Config.Storage, si.Config.Replicas
		}
		_, err = js.CreateStream(ctx, cfg)
		if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return nil, fmt.Errorf("creating stream %s to keep %s: %w", name, k.subject, err)
		}
		// In use: another source made it meanwhile, or a stream of that
		// name holds other subjects. Only a stream that holds the
		// subject will do.
		if name, err = js.StreamNameBySubject(ctx, k.subject); errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("stream %s exists and does not hold %s", advisoryStreamPrefix+stream, k.subject)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("looking up the stream that keeps %s: %w", k.subject, err)
	}
	k.ours = name == advisoryStreamPrefix+stream
	if k.st, err = js.Stream(ctx, name); err != nil {
		return nil, fmt.Errorf("stream %s, which keeps %s: %w", name, k.subject, err)
	}
	if lookup {
		k.stale = k.st.CachedInfo().State.LastSeq
		_, err := js.Consumer(ctx, stream, durable)
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			k.fresh = true
		case err != nil:
			return nil, err
		}
	}
	return k, nil
}

// consumer drops the advisories about an earlier consumer of the same name
// (see keepAdvisories) from the source's own stream — from a stream kept
// by someone else it drops nothing: an advisory about an earlier consumer
// then dead-letters a copy of the message now at that sequence, if there
// is one, or fails one run — and creates or updates the durable consumer
// through which Reads take the advisories.
func (k *advisoryKeeper) consumer(ctx context.Context, js jetstream.JetStream, stream, durable string) (jetstream.Consumer, error) {
	if k.fresh && k.ours && k.stale > 0 {
		// Only up to the sequence noted before the lookup: what came
		// after may be about the new consumer.
		err := k.st.Purge(ctx, jetstream.WithPurgeSubject(k.subject), jetstream.WithPurgeSequence(k.stale+1))
		if err != nil {
			return nil, fmt.Errorf("dropping the advisories of an earlier consumer %s from stream %s: %w", durable, k.st.CachedInfo().Config.Name, err)
		}
	}
	// The stream's name and the consumer's are joined with their lengths:
	// either may hold any character a consumer name can.
	cname := fmt.Sprintf("natsx_gaveup_%d_%s_%s", len(stream), stream, durable)
	name := k.st.CachedInfo().Config.Name
	cons, err := js.CreateOrUpdateConsumer(ctx, name, jetstream.ConsumerConfig{
		Durable:       cname,
		Description:   "natsx: the max-deliveries advisories of consumer " + durable + " on stream " + stream,
		FilterSubject: k.subject,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       advisoryAckWait,
		MaxAckPending: 1000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer %s of stream %s, which keeps %s: %w", cname, name, k.subject, err)
	}
	return cons, nil
}

// gaveUpEvent is the part of a max-deliveries advisory the source reads.
type gaveUpEvent struct {
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// readAdvisory parses advisory a. It reports false for one that names no
// message.
func readAdvisory(a jetstream.Msg) (gaveUpEvent, bool) {
	var ev gaveUpEvent
	if err := json.Unmarshal(a.Data(), &ev); err != nil || ev.StreamSeq == 0 {
		return ev, false
	}
	return ev, true
}

// giveUps resolves a source's max-deliveries advisories, read through
// their consumer (see keepAdvisories): it dead-letters the message each
// names, or, without a dead-letter subject, fails the run naming them.
type giveUps struct {
	cons    jetstream.Consumer // of the stream that keeps the advisories
	park    *parker
	stream  string
	durable string
	n       *sourceCounts
	log     *sourceLog
}

// resolveStored resolves the advisories stored before the Read started
// (the server gave up while no Read ran, or a Read handed them back), so
// that a run that fails on its first messages still resolves them. It
// fetches them without waiting; what it cannot fetch now, the Read's
// consumption of advisories delivers later.
func (g *giveUps) resolveStored(ctx context.Context) error {
	for {
		b, err := g.cons.FetchNoWait(advisoryBatch)
		if err != nil {
			return nil
		}
		var as []jetstream.Msg
		for a := range b.Messages() {
			as = append(as, a)
		}
		if len(as) == 0 {
			return nil
		}
		if err := g.resolve(ctx, as); err != nil {
			return err
		}
	}
}

// takeReady appends to as the advisories ready on ch, without waiting.
func takeReady(as []jetstream.Msg, ch <-chan jetstream.Msg) []jetstream.Msg {
	for {
		select {
		case a := <-ch:
			as = append(as, a)
		default:
			return as
		}
	}
}

// resolve resolves advisories as in order: it dead-letters the
// message each names, fetched from the stream by sequence, then
// acknowledges the advisory; without a dead-letter subject it
// acknowledges them all and returns an error naming their messages, so
// that each loss is reported once and not silently. If one cannot be
// resolved now, it and those after it are handed back for a later Read,
// and the error says why.
func (g *giveUps) resolve(ctx context.Context, as []jetstream.Msg) error {
	if g.park.subject == "" {
		var named []string
		var first gaveUpEvent
		for _, a := range as {
			if ev, ok := readAdvisory(a); ok {
				if len(named) == 0 {
					first = ev
				}
				named = append(named, fmt.Sprintf("stream sequence %d after %d deliveries", ev.StreamSeq, ev.Deliveries))
				g.n.gaveUp.Add(1)
			}
			g.resolved(a)
		}
		if len(named) == 0 {
			return nil
		}
		err := fmt.Errorf("natsx: source %s/%s: the server stopped delivering the message at %s (MaxDeliver) and it was never settled; set DeadLetterTo to keep such messages",
			g.stream, g.durable, strings.Join(named, ", the message at "))
		g.log.gaveUp(len(named), first, err)
		return err
	}
	for i, a := range as {
		if err := g.deadLetter(ctx, a); err != nil {
			for _, b := range as[i+1:] {
				_ = b.Nak()
			}
			return err
		}
	}
	return nil
}

// deadLetter dead-letters the message advisory a names and
// acknowledges a; it naks a if the message cannot be dead-lettered now.
func (g *giveUps) deadLetter(ctx context.Context, a jetstream.Msg) error {
	ev, ok := readAdvisory(a)
	if !ok {
		g.resolved(a)
		return nil
	}
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := g.park.gaveUp(gctx, ev)
	cancel()
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		g.n.gaveUp.Add(1)
		g.resolved(a)
		err := fmt.Errorf("natsx: source %s/%s: the server stopped delivering the message at stream sequence %d after %d deliveries (MaxDeliver), and the stream no longer holds it, so it cannot be dead-lettered",
			g.stream, g.durable, ev.StreamSeq, ev.Deliveries)
		g.log.gaveUp(1, ev, err)
		return err
	case err != nil:
		_ = a.Nak()
		g.log.deadFailed(ev.StreamSeq, err)
		return fmt.Errorf("natsx: source %s/%s: dead-lettering the message at stream sequence %d that the server stopped delivering (a later Read tries again): %w",
			g.stream, g.durable, ev.StreamSeq, err)
	}
	g.n.gaveUp.Add(1)
	g.log.dead(ev.StreamSeq, ev.Deliveries, "the server stopped delivering it (MaxDeliver) before it was settled")
	g.resolved(a)
	return nil
}

// resolved acknowledges advisory a, counting an acknowledgement the
// client cannot send as a settle error (the advisory then comes back
// after its AckWait and is resolved again: a dead letter stored twice is
// one, by its ID).
func (g *giveUps) resolved(a jetstream.Msg) {
	if err := a.Ack(); err != nil {
		g.n.settleErrs.Add(1)
		g.log.ackFailed(err)
	}
}
