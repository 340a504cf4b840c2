package chans

import (
	"context"
	"runtime"
)

// The taking side of an Elastic: Pop, PopMany, and the wake-ups a take
// owes to a waiting Push or to the goroutine.

// Pop removes and returns the oldest queued value, waiting for one while the
// queue is empty. It returns ErrClosed once the input has ended and the
// queue is empty, or after Close, and ctx.Err() if ctx is done first.
func (e *Elastic[T]) Pop(ctx context.Context) (T, error) {
	if ctx == nil {
		panic("chans: nil context passed to Elastic.Pop")
	}
	var one [1]T
	_, err := e.PopMany(ctx, one[:])
	return one[0], err
}

// PopMany moves up to len(dst) of the oldest queued values into dst, oldest
// first, and returns how many. It waits while the queue is empty, then takes
// what is there; when that is less than a quarter of len(dst) it first
// yields the processor once (well under a microsecond when nothing else is
// runnable) to let producers add to the batch. Errors are as for Pop; with
// an error, n is 0. With an empty dst it returns at once: 0 and ErrClosed
// where Pop would return ErrClosed, 0 and nil otherwise. Cost: a few mutex round trips and one copy for the
// whole batch, which makes it the cheapest way out of an Elastic.
func (e *Elastic[T]) PopMany(ctx context.Context, dst []T) (int, error) {
	if ctx == nil {
		panic("chans: nil context passed to Elastic.PopMany")
	}
	if len(dst) == 0 {
		e.mu.Lock()
		end := e.closed || e.ended && e.q.len() == 0
		e.mu.Unlock()
		if end {
			return 0, ErrClosed
		}
		return 0, nil
	}
	e.mu.Lock()
	if e.q.len() < len(dst)/4 && !e.closed && !e.ended {
		// A small batch: give producers one yield's worth of time to add
		// to it, so that a fast consumer takes the mutex (and steals its
		// cache line from them) less often.
		e.mu.Unlock()
		runtime.Gosched()
		e.mu.Lock()
	}
	for spins := 0; e.q.len() == 0; spins++ {
		if e.closed || e.ended {
			e.mu.Unlock()
			return 0, ErrClosed
		}
		if spins < popSpins {
			// A producer on another CPU is likely mid-burst: yielding a
			// few times costs less than parking and being woken, and
			// lets a batch build up.
			e.mu.Unlock()
			runtime.Gosched()
			e.mu.Lock()
			continue
		}
		if e.popReady == nil {
			e.mu.Unlock()
			panicZero("Elastic", "NewElastic")
		}
		e.popWaiters++
		e.mu.Unlock()
		var err error
		select {
		case <-e.popReady:
		case <-e.closing:
		case <-e.inputDone:
		case <-ctx.Done():
			err = ctx.Err()
		}
		e.mu.Lock()
		e.popWaiters--
		if err != nil {
			e.mu.Unlock()
			return 0, err
		}
	}
	n := e.q.popInto(dst)
	e.tookLocked(n)
	e.mu.Unlock()
	return n, nil
}

// tookLocked follows the removal of n values from the queue: it passes the
// value-ready hint on to the next waiting Pop, makes room known to a waiting
// Push or to the goroutine held back by a Block limit, and lets the
// goroutine return once an ended input's queue is empty.
func (e *Elastic[T]) tookLocked(n int) {
	left := e.q.len()
	if left > 0 && e.popWaiters > 0 {
		select {
		case e.popReady <- struct{}{}:
		default:
		}
	}
	if e.cfg.limit > 0 && left < e.cfg.limit && left+n >= e.cfg.limit {
		if e.pushWaiters > 0 {
			select {
			case e.pushReady <- struct{}{}:
			default:
			}
		}
		e.wakePump()
	}
	if left == 0 && e.ended {
		e.wakePump()
	}
}
