package natsx

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sluicehq/sluice"
)

// startLogs makes the source's logger and tallies when it has a Logger.
func (s *Source) startLogs() {
	s.log = newLogger(s.cfg.Logger, s.js.Conn(), slog.String("stream", s.stream), slog.String("consumer", s.durable))
	s.ackFails = s.log.tally(slog.LevelWarn, "acks failed")
	s.deadLogs = s.log.tally(slog.LevelWarn, "messages parked")
	s.deadFails = s.log.tally(slog.LevelWarn, "parking failed")
}

// logReady logs the consumer NewSource created, updated or bound.
func (s *Source) logReady() {
	if s.log == nil {
		return
	}
	msg := "consumer created"
	if s.cfg.bind {
		msg = "consumer bound"
	}
	attrs := []slog.Attr{slog.Int("max_deliver", s.maxDeliver)}
	if ci := s.cons.CachedInfo(); ci != nil {
		attrs = append(attrs, slog.Int("max_in_flight", ci.Config.MaxAckPending), sluice.LogDuration("ack_wait", ci.Config.AckWait))
	}
	if s.cfg.deadSubject != "" {
		attrs = append(attrs, slog.String("dead_letter_to", s.cfg.deadSubject))
	}
	s.log.log(slog.LevelInfo, msg, attrs...)
}

// loggedRun is run between a "read started" and a "read ended" line; the
// latter counts what happened meanwhile.
func (s *Source) loggedRun(ctx context.Context, out *sluice.Emitter[Msg], pipeline, stage string) error {
	names := []slog.Attr{slog.String("pipeline", pipeline), slog.String("stage", stage)}
	s.log.log(slog.LevelInfo, "read started", names...)
	start, before := time.Now(), s.Stats()
	o := s.log.outage()
	nc := s.js.Conn()
	status := nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CONNECTED)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		o.watch(status)
	}()
	err := s.run(ctx, out, o)
	nc.RemoveStatusListener(status) // ends the watch
	<-watched
	s.flushLogs()
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
		attrs = append(attrs, s.log.err(err))
	}
	s.log.log(level, "read ended", attrs...)
	return err
}

// logTick writes the tallies whose interval has passed; a Read's idle
// check calls it.
func (s *Source) logTick() {
	if s.log == nil {
		return
	}
	s.ackFails.FlushDue()
	s.deadLogs.FlushDue()
	s.deadFails.FlushDue()
}

// flushLogs writes what the tallies hold.
func (s *Source) flushLogs() {
	s.ackFails.Flush()
	s.deadLogs.Flush()
	s.deadFails.Flush()
}

// logAckFailed counts an ack, nak or term the client could not send.
func (s *Source) logAckFailed(err error) {
	if s.log != nil {
		s.ackFails.Add(1, s.log.err(err))
	}
}

// logDead counts a message parked on the DeadLetterTo subject: one that failed on its last
// delivery (cause) or that the server gave up on.
func (s *Source) logDead(seq, deliveries uint64, cause string) {
	if s.log != nil {
		s.deadLogs.Add(1, slog.Uint64("stream_seq", seq), slog.Uint64("deliveries", deliveries), slog.String("cause", s.log.scrub(cause)))
	}
}

// logDeadFailed counts a message that could not be parked.
func (s *Source) logDeadFailed(seq uint64, err error) {
	if s.log != nil {
		s.deadFails.Add(1, slog.Uint64("stream_seq", seq), s.log.err(err))
	}
}

// logGaveUp logs messages the server gave up on that are not
// dead-lettered: the run fails with err, naming them.
func (s *Source) logGaveUp(n int, first gaveUpEvent, err error) {
	if s.log != nil {
		s.log.log(slog.LevelError, "messages given up", slog.Int("count", n),
			slog.Uint64("stream_seq", first.StreamSeq), slog.Uint64("deliveries", first.Deliveries), s.log.err(err))
	}
}
