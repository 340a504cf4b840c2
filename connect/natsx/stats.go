package natsx

import "sync/atomic"

// padded is a counter on a cache line of its own: the reading goroutine
// and the settling ones (a sink's, usually) write different counters.
type padded struct {
	atomic.Int64
	_ [56]byte
}

// SourceStats counts what a [Source] has done since it was created.
type SourceStats struct {
	Received int64 // messages fetched (emitted, or handed back at a stop)
	Acked    int64 // settled without a cause: acknowledgement sent
	Failed   int64 // settled with a cause (Receipt.Fail)
	// Redelivered is the messages received that the server had
	// delivered before (their delivery count is over 1): failed ones
	// delivered again, and those a process took and never settled —
	// one that was killed, say — delivered again after AckWait.
	Redelivered int64
	Requeued    int64 // failed messages negatively acknowledged, to be delivered again after the Redeliver delay
	// Parked is the messages published to the DeadLetterTo subject
	// (failed on their last delivery, or given up on by the server): the
	// broker's dead letters, parked for an operator. They are not the
	// pipeline's dead-lettered items (sluice.DeadLetter routes those to a
	// stream of the pipeline, whose sink acknowledges them here).
	Parked       int64
	InFlight     int64 // emitted and not settled yet, counting those a failed or cancelled run abandoned
	Termed       int64 // terminated after being dead-lettered: never delivered again
	HandedBack   int64 // received but not processed when a run stopped: negatively acknowledged at once
	GaveUp       int64 // messages the server stopped delivering (MaxDeliver reached) whose advisories this source's Reads resolved: dead-lettered, or named by a failed run
	FetchErrors  int64 // errors the consumer reported and recovered from (missed heartbeats, reconnects)
	SettleErrors int64 // acknowledgements, naks and terms the client could not send, and failed dead-letter publishes
}

// Stats returns the source's counts. It is safe to call at any time.
func (s *Source) Stats() SourceStats {
	return SourceStats{
		Received:     s.received.Load(),
		Acked:        s.acked.Load(),
		Failed:       s.failed.Load(),
		Redelivered:  s.redelivered.Load(),
		Requeued:     s.requeued.Load(),
		Parked:       s.parked.Load(),
		InFlight:     s.pending.len(),
		Termed:       s.termed.Load(),
		HandedBack:   s.handedBack.Load(),
		GaveUp:       s.gaveUp.Load(),
		FetchErrors:  s.fetchErrs.Load(),
		SettleErrors: s.settleErrs.Load(),
	}
}
