package natsx

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// watch is what an idle Read checks: whether the server is still there
// ([MaxOutage]) and whether everything is done ([StopWhenCaughtUp]). The
// consumer's MaxAckPending ([MaxInFlight]) does the rest of the flow
// control: the server delivers no more than that many unsettled messages.
type watch struct {
	r       *reader
	idle    *time.Timer
	healthy time.Time // last time the server was known to be there
	lastErr error     // the consumer's error since the last check

	// The Read's advisory consumption; nil channels (never ready) when
	// the source keeps no advisories.
	advMsgs <-chan jetstream.Msg
	advErrs <-chan error

	// When a check first found the consumer caught up, and its delivered
	// sequence then; zero once anything has come since.
	caughtAt  time.Time
	caughtSeq uint64

	outage *outage // nil without a Logger
}

func newWatch(r *reader, adv *consumption, o *outage) *watch {
	w := &watch{r: r, idle: time.NewTimer(r.cfg.idleCheck), healthy: time.Now(), outage: o}
	if adv != nil {
		w.advMsgs, w.advErrs = adv.msgs, adv.errs
	}
	return w
}

// check runs at each idle check: it reports stop with an error after
// MaxOutage without the server, and stop with nil once caught up.
func (w *watch) check(ctx context.Context) (stop bool, err error) {
	r, nc := w.r, w.r.js.Conn()
	r.log.tick()
	if nc.IsConnected() && w.lastErr == nil {
		w.healthy = time.Now()
		w.outage.up()
	}
	w.lastErr = nil
	if r.cfg.maxOutage > 0 && time.Since(w.healthy) > r.cfg.maxOutage {
		return true, fmt.Errorf("natsx: source %s/%s: no connection to the server for %v (status %v)", r.stream, r.durable, r.cfg.maxOutage, nc.Status())
	}
	if r.cfg.caughtUp {
		// An error here (the server is restarting, say) only means
		// asking again at the next idle check; a lasting outage is
		// caught above.
		done, seq, err := r.caughtUp(ctx)
		switch {
		case err != nil || !done:
			w.caughtAt = time.Time{}
		case r.adv == nil:
			return true, nil
		case w.caughtAt.IsZero() || seq != w.caughtSeq:
			w.caughtAt, w.caughtSeq = time.Now(), seq
		case time.Since(w.caughtAt) >= advisoryWindow:
			// Caught up then and now, nothing delivered in between: a
			// message the server gave up on before the first check has
			// its advisory stored by now, and the second check saw it
			// resolved.
			return true, nil
		}
	}
	return false, nil
}

// caughtUp reports whether the consumer has nothing left to deliver and
// nothing delivered but unsettled, and no advisory about a message the
// server gave up on is waiting to be resolved; it returns the consumer's
// delivered sequence. It asks the server, whose counts cover every
// process's messages, this one's included; the source's own count
// (InFlight) would not do: it keeps the messages a failed or cancelled
// run abandoned, which the server delivers again and which are settled
// then.
func (r *reader) caughtUp(ctx context.Context) (done bool, delivered uint64, err error) {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ci, err := r.cons.Info(ictx)
	if err != nil || ci.NumPending != 0 || ci.NumAckPending != 0 {
		return false, 0, err
	}
	if r.adv != nil {
		// Asked after the consumer: see advisoryWindow.
		ai, err := r.adv.cons.Info(ictx)
		if err != nil || ai.NumPending != 0 || ai.NumAckPending != 0 {
			return false, 0, err
		}
	}
	return true, ci.Delivered.Consumer, nil
}
