package kafkax

import "time"

// SourceStats counts what a [Source] has done since it was created.
type SourceStats struct {
	Received     int64         // records emitted for the first time (a Transactional source counts again those an aborted epoch delivers again)
	Acked        int64         // records acknowledged (parked ones included)
	Failed       int64         // deliveries settled with a failure
	Redelivered  int64         // records emitted again: after a failure, an aborted transaction, or a restart or rebalance (those the partition's last commit records as delivered; a killed member's deliveries after its last commit come again uncounted)
	Skipped      int64         // records not emitted: the group's last commit recorded them settled
	Parked       int64         // records stored in the dead-letter topic: the broker's dead letters, not the pipeline's (sluice.DeadLetter)
	InFlight     int64         // records fetched and not settled
	Commits      int64         // successful offset commits (a Transactional source's are counted in TxnCommitted)
	CommitErrors int64         // failed commits (what they held is committed by the next)
	FetchErrors  int64         // errors reported by fetches (franz-go retries them)
	Pauses       int64         // times fetching paused because MaxInFlight was reached
	Paused       time.Duration // total time fetching was paused

	// Transactional only (zero otherwise):
	TxnCommitted  int64         // transactions committed: one epoch's outputs and offsets each
	TxnAborted    int64         // transactions aborted: their inputs were delivered again
	TxnEpochTime  time.Duration // summed length of the committed epochs (÷ TxnCommitted: the mean)
	TxnCommitTime time.Duration // summed time closing them: the wait for what was in flight, the flush, the offsets, EndTxn (÷ TxnCommitted: the mean)
}

// Stats returns the source's counts. It is safe to call at any time.
func (s *Source) Stats() SourceStats {
	st := SourceStats{
		Received:     s.received.Load(),
		Acked:        s.acked.Load(),
		Failed:       s.failed.Load(),
		Redelivered:  s.redelivered.Load(),
		Skipped:      s.skipped.Load(),
		Parked:       s.deadLettered.Load(),
		InFlight:     s.fl.n.Load(),
		Commits:      s.tr.commits.Load(),
		CommitErrors: s.tr.commitErrs.Load(),
		FetchErrors:  s.fetchErrs.Load(),
		Pauses:       s.fl.pauses.Load(),
		Paused:       time.Duration(s.fl.pausedNs.Load()),
	}
	s.tx.stats(&st)
	return st
}
