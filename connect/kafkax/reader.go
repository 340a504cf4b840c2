package kafkax

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// reader is the state of the poll loop that [Read] runs: one at a time.
type reader struct {
	reading atomic.Bool
	ctx     atomic.Pointer[context.Context] // the running Read's, for dead-letter produces
	unsent  []polled                        // tracked by a Read that stopped before emitting them; only the reading goroutine touches it
	kicks   chan struct{}                   // cap 1: a redelivery or a failure, for a paused reader
	idle    time.Duration                   // StopWhenCaughtUp: the last idle poll's wait (0: a poll found records since); only the reading goroutine touches it

	mu      sync.Mutex
	cancel  context.CancelFunc // the waiting poll's; nil when none waits
	kicked  bool               // a kick came while no poll waited: the next one returns at once
	stopped bool               // the pipeline drains or stopped: poll no more
}

func (r *reader) init() { r.kicks = make(chan struct{}, 1) }

// idleWait is how long the next poll of a StopWhenCaughtUp source waits
// for records before the source asks whether it is caught up: 10 ms after
// a poll that found records, doubling with each poll that found none, to
// idleCheck: a backlog's end is seen soon after its last record settles,
// and a source that waits for records asks the broker a few times, then
// every idleCheck.
func (r *reader) idleWait() time.Duration {
	r.idle = min(max(2*r.idle, idleFirst), idleCheck)
	return r.idle
}

// context returns the running Read's context, or a background one.
func (r *reader) context() context.Context {
	if c := r.ctx.Load(); c != nil {
		return *c
	}
	return context.Background()
}

// kick ends the waiting poll (or makes the next one return at once): a
// redelivery is due, or the run failed.
func (r *reader) kick() {
	r.mu.Lock()
	if r.cancel != nil {
		r.cancel()
	} else {
		r.kicked = true
	}
	r.mu.Unlock()
	signal(r.kicks)
}

// stop ends the waiting poll for good: the pipeline drains or stopped.
func (r *reader) stop() {
	r.mu.Lock()
	r.stopped = true
	if r.cancel != nil {
		r.cancel()
	}
	r.mu.Unlock()
}

// begin returns the context of the next poll, which waits at most d (no
// bound when 0); false when the reader is stopped.
func (r *reader) begin(ctx context.Context, d time.Duration) (context.Context, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil, false
	}
	var pctx context.Context
	if d > 0 {
		pctx, r.cancel = context.WithTimeout(ctx, d)
	} else {
		pctx, r.cancel = context.WithCancel(ctx)
	}
	if r.kicked {
		r.kicked = false
		r.cancel()
	}
	return pctx, true
}

// end releases the poll's context.
func (r *reader) end() {
	r.mu.Lock()
	r.cancel()
	r.cancel = nil
	r.mu.Unlock()
}
