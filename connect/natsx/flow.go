package natsx

import (
	"context"
	"fmt"
	"time"
)

// watch is what an idle Read checks: whether the server is still there
// ([MaxOutage]) and whether everything is done ([StopWhenCaughtUp]). The
// consumer's MaxAckPending ([MaxInFlight]) does the rest of the flow
// control: the server delivers no more than that many unsettled messages.
type watch struct {
	s       *Source
	idle    *time.Timer
	healthy time.Time // last time the server was known to be there
	lastErr error     // the consumer's error since the last check
}

func newWatch(s *Source) *watch {
	return &watch{s: s, idle: time.NewTimer(s.cfg.idleCheck), healthy: time.Now()}
}

// check runs at each idle check: it reports stop with an error after
// MaxOutage without the server, and stop with nil once caught up.
func (w *watch) check(ctx context.Context) (stop bool, err error) {
	s, nc := w.s, w.s.js.Conn()
	if nc.IsConnected() && w.lastErr == nil {
		w.healthy = time.Now()
	}
	w.lastErr = nil
	if s.cfg.maxOutage > 0 && time.Since(w.healthy) > s.cfg.maxOutage {
		return true, fmt.Errorf("natsx: source %s/%s: no connection to the server for %v (status %v)", s.stream, s.durable, s.cfg.maxOutage, nc.Status())
	}
	if s.cfg.caughtUp {
		// An error here (the server is restarting, say) only means
		// asking again at the next idle check; a lasting outage is
		// caught above.
		if done, err := s.caughtUp(ctx); err == nil && done {
			return true, nil
		}
	}
	return false, nil
}

// caughtUp reports whether the consumer has nothing left to deliver and
// nothing delivered but unsettled. It asks the server, whose count covers
// every process's messages, this one's included; the source's own count
// (InFlight) would not do: it keeps the messages a failed or cancelled run
// abandoned, which the server delivers again and which are settled then.
func (s *Source) caughtUp(ctx context.Context) (bool, error) {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ci, err := s.cons.Info(ictx)
	if err != nil {
		return false, err
	}
	return ci.NumPending == 0 && ci.NumAckPending == 0, nil
}
