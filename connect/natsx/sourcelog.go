package natsx

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sluicehq/sluice"
)

// sourceLog is what a source writes to its Logger: the lines of its
// consumer and its Reads, and the tallies of its failures, each a line at
// most once per sluice.LogInterval. Without a Logger every method does
// nothing.
type sourceLog struct {
	log       *logger       // nil without a Logger
	ackFails  *sluice.Tally // acks, naks and terms the client could not send
	deadLogs  *sluice.Tally // messages parked
	deadFails *sluice.Tally // dead letters that could not be published
}

// newSourceLog makes the log of the source reading consumer durable on
// stream through nc; l may be nil.
func newSourceLog(l *slog.Logger, nc *nats.Conn, stream, durable string) sourceLog {
	g := newLogger(l, nc, slog.String("stream", stream), slog.String("consumer", durable))
	return sourceLog{
		log:       g,
		ackFails:  g.tally(slog.LevelWarn, "acks failed"),
		deadLogs:  g.tally(slog.LevelWarn, "messages parked"),
		deadFails: g.tally(slog.LevelWarn, "parking failed"),
	}
}

// ready logs the consumer NewSource created, updated or bound.
func (l *sourceLog) ready(s *Source) {
	if l.log == nil {
		return
	}
	msg := "consumer created"
	if s.cfg.bind {
		msg = "consumer bound"
	}
	attrs := []slog.Attr{slog.Int("max_deliver", s.acks.maxDeliver)}
	if ci := s.cons.CachedInfo(); ci != nil {
		attrs = append(attrs, slog.Int("max_in_flight", ci.Config.MaxAckPending), sluice.LogDuration("ack_wait", ci.Config.AckWait))
	}
	if s.cfg.deadSubject != "" {
		attrs = append(attrs, slog.String("dead_letter_to", s.cfg.deadSubject))
	}
	l.log.log(slog.LevelInfo, msg, attrs...)
}

// loggedRun is run between a "read started" and a "read ended" line; the
// latter counts what happened meanwhile.
func (s *Source) loggedRun(ctx context.Context, out *sluice.Emitter[Msg], pipeline, stage string) error {
	l := s.log.log
	names := []slog.Attr{slog.String("pipeline", pipeline), slog.String("stage", stage)}
	l.log(slog.LevelInfo, "read started", names...)
	start, before := time.Now(), s.Stats()
	o := l.outage()
	nc := s.js.Conn()
	status := nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CONNECTED)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		o.watch(status)
	}()
	err := s.rd.run(ctx, out, o)
	nc.RemoveStatusListener(status) // ends the watch
	<-watched
	s.log.flush()
	after := s.Stats()
	attrs := append(names,
		sluice.LogDuration("elapsed", time.Since(start)),
		slog.Int64("received", after.Received-before.Received),
		slog.Int64("acked", after.Acked-before.Acked),
		slog.Int64("failed", after.Failed-before.Failed),
		slog.Int64("redelivered", after.Redelivered-before.Redelivered),
		slog.Int64("parked", after.Parked-before.Parked),
		slog.Int64("gave_up", after.GaveUp-before.GaveUp),
		slog.Int64("handed_back", after.HandedBack-before.HandedBack),
		slog.Int64("in_flight", after.InFlight))
	level := slog.LevelInfo
	if err != nil && !errors.Is(err, context.Canceled) {
		level = slog.LevelError
		attrs = append(attrs, l.err(err))
	}
	l.log(level, "read ended", attrs...)
	return err
}

// tick writes the tallies whose interval has passed; a Read's idle check
// calls it.
func (l *sourceLog) tick() {
	if l.log == nil {
		return
	}
	l.ackFails.FlushDue()
	l.deadLogs.FlushDue()
	l.deadFails.FlushDue()
}

// flush writes what the tallies hold.
func (l *sourceLog) flush() {
	l.ackFails.Flush()
	l.deadLogs.Flush()
	l.deadFails.Flush()
}

// ackFailed counts an ack, nak or term the client could not send.
func (l *sourceLog) ackFailed(err error) {
	if l.log != nil {
		l.ackFails.Add(1, l.log.err(err))
	}
}

// dead counts a message parked on the DeadLetterTo subject: one that
// failed on its last delivery (cause) or that the server gave up on.
func (l *sourceLog) dead(seq, deliveries uint64, cause string) {
	if l.log != nil {
		l.deadLogs.Add(1, slog.Uint64("stream_seq", seq), slog.Uint64("deliveries", deliveries), slog.String("cause", l.log.scrub(cause)))
	}
}

// deadFailed counts a message that could not be parked.
func (l *sourceLog) deadFailed(seq uint64, err error) {
	if l.log != nil {
		l.deadFails.Add(1, slog.Uint64("stream_seq", seq), l.log.err(err))
	}
}

// gaveUp logs messages the server gave up on that are not dead-lettered:
// the run fails with err, naming them.
func (l *sourceLog) gaveUp(n int, first gaveUpEvent, err error) {
	if l.log != nil {
		l.log.log(slog.LevelError, "messages given up", slog.Int("count", n),
			slog.Uint64("stream_seq", first.StreamSeq), slog.Uint64("deliveries", first.Deliveries), l.log.err(err))
	}
}
