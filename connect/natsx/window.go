package natsx

import "github.com/sluicehq/sluice"

// A window stage of the core (sluice.Window) holds the receipts of the
// messages it folded until its windows are emitted and stored. The
// server stops delivering once MaxAckPending messages are unacknowledged
// and cannot set held ones aside, so the source implements
// sluice.InFlightBounded: a window stage that holds MaxInFlight of its
// messages fails the pipeline naming the setting, rather than waiting
// for input that cannot come. A held message must also be settled
// before AckWait runs out, or the server delivers it again and the
// window folds it twice: set AckWait above the window's size plus its
// OutOfOrder and Lateness plus the time to store a window. A source is
// one partition of the window's watermark (one durable consumer).

var (
	_ sluice.InFlightBounded = (*Source)(nil)
	_ sluice.Partitioned     = (*Source)(nil)
)

// InFlightBound implements sluice.InFlightBounded: [MaxInFlight], the
// consumer's MaxAckPending.
func (s *Source) InFlightBound() (int, string) {
	return s.cfg.maxInFlight, "natsx.MaxInFlight (the consumer's MaxAckPending)"
}

// PartitionOf implements sluice.Partitioned: a source is one partition.
func (s *Source) PartitionOf(uint64) uint64 { return 0 }

// PartitionName implements sluice.Partitioned: "stream/durable".
func (s *Source) PartitionName(uint64) string { return s.stream + "/" + s.durable }
