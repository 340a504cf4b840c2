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
func (s *Source) Stats() SourceStats { return s.counts.stats(s.acks.pending.len()) }

// sourceCounts are a source's tallies, each on its own cache line:
// received, redelivered and handedBack are written by the reading
// goroutines, the others by whichever goroutines settle messages
// (typically the sink's). The source's parts share them.
type sourceCounts struct {
	received    padded
	acked       padded
	failed      padded
	redelivered padded // messages received with a delivery count over 1
	requeued    padded // failed messages naked
	termed      padded
	handedBack  padded
	fetchErrs   padded
	settleErrs  padded
	gaveUp      padded // max-deliveries advisories seen
	parked      padded // messages published to the dead-letter subject
}

func (c *sourceCounts) stats(inFlight int64) SourceStats {
	return SourceStats{
		Received:     c.received.Load(),
		Acked:        c.acked.Load(),
		Failed:       c.failed.Load(),
		Redelivered:  c.redelivered.Load(),
		Requeued:     c.requeued.Load(),
		Parked:       c.parked.Load(),
		InFlight:     inFlight,
		Termed:       c.termed.Load(),
		HandedBack:   c.handedBack.Load(),
		GaveUp:       c.gaveUp.Load(),
		FetchErrors:  c.fetchErrs.Load(),
		SettleErrors: c.settleErrs.Load(),
	}
}
