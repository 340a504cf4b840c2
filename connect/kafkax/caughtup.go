package kafkax

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// caughtUp commits what is settled and reports whether the group has
// committed every partition of the source's topics up to its end,
// whichever member read it: the last stable offset when reading committed
// records (past it lie records of a transaction still open, which a read
// committed fetch does not return yet), the high watermark otherwise. An
// error (the broker is restarting, say) only means asking again after the
// next idle poll.
func (s *Source) caughtUp(ctx context.Context) bool {
	if s.tx == nil && s.tr.commitOwned(ctx) != nil || s.tr.busy() {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	adm := kadm.NewClient(s.cl)
	list := adm.ListCommittedOffsets
	if s.cfg.uncommitted {
		list = adm.ListEndOffsets
	}
	ends, err := list(ctx, s.topics...)
	if err == nil {
		err = ends.Error()
	}
	starts, serr := adm.ListStartOffsets(ctx, s.topics...)
	if serr == nil {
		serr = starts.Error()
	}
	committed, cerr := adm.FetchOffsetsForTopics(ctx, s.group, s.topics...)
	if cerr == nil {
		cerr = committed.Error()
	}
	if err != nil || serr != nil || cerr != nil {
		return false
	}
	done := true
	ends.Each(func(end kadm.ListedOffset) {
		at := int64(-1)
		if c, ok := committed.Lookup(end.Topic, end.Partition); ok {
			at = c.At
		}
		if at < 0 {
			st, _ := starts.Lookup(end.Topic, end.Partition)
			at = st.Offset
		}
		if to, ok := s.tr.parkedTo(end.Topic, end.Partition); ok && at < end.Offset {
			at = to // read to here; what is not committed waits in a window (park.go)
		}
		done = done && at >= end.Offset
	})
	return done
}
