package ring

import "context"

// tryQueue is what the blocking methods need of a queue: its non-blocking
// operations, the conditions its waiters re-check, and the waiters. SPSC,
// MPSC and MPMC implement it.
type tryQueue[T any] interface {
	TryPush(v T) error
	TryPushMany(xs []T) (int, error)
	TryPop() (T, error)
	TryPopMany(dst []T) (int, error)
	// readable and writable report whether a pop or a push could make
	// progress, under the contract of waiter.await.
	readable() bool
	writable() bool
	// waiters returns where consumers wait for items and producers for
	// room.
	waiters() (notEmpty, notFull *waiter)
}

// The blocking methods of every queue are written once, below: spin →
// yield → park waiting, and the retries after it. Each method tries once
// itself before it calls one of these, so that an operation that can
// proceed costs its Try call and nothing more: a call through tryQueue
// costs a few nanoseconds, a good share of an uncontended push or pop.
// These are called after a try that made no progress; they check ctx, wait
// and try again until the operation succeeds, the queue is closed or ctx
// is done. An operation that can proceed does so even when ctx is already
// done.

// pushWait finishes Push after a TryPush that returned ErrFull.
func pushWait[T any](ctx context.Context, q tryQueue[T], v T) error {
	_, notFull := q.waiters()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := notFull.await(ctx, q.writable); err != nil {
			return err
		}
		if err := q.TryPush(v); err != ErrFull {
			return err
		}
	}
}

// pushManyWait finishes PushMany after a TryPushMany that appended done <
// len(xs) items without an error.
func pushManyWait[T any](ctx context.Context, q tryQueue[T], xs []T, done int) (int, error) {
	_, notFull := q.waiters()
	for n := done; ; { // n: items the last try appended; wait only when it appended none
		if n == 0 {
			if err := ctx.Err(); err != nil {
				return done, err
			}
			if err := notFull.await(ctx, q.writable); err != nil {
				return done, err
			}
		}
		var err error
		n, err = q.TryPushMany(xs[done:])
		done += n
		if err != nil || done == len(xs) {
			return done, err
		}
	}
}

// popWait finishes Pop after a TryPop that returned ErrEmpty.
func popWait[T any](ctx context.Context, q tryQueue[T]) (T, error) {
	notEmpty, _ := q.waiters()
	for {
		if err := ctx.Err(); err != nil {
			var zero T
			return zero, err
		}
		if err := notEmpty.await(ctx, q.readable); err != nil {
			var zero T
			return zero, err
		}
		if v, err := q.TryPop(); err != ErrEmpty {
			return v, err
		}
	}
}

// popManyWait finishes PopMany after a TryPopMany into a non-empty dst that
// moved nothing.
func popManyWait[T any](ctx context.Context, q tryQueue[T], dst []T) (int, error) {
	notEmpty, _ := q.waiters()
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := notEmpty.await(ctx, q.readable); err != nil {
			return 0, err
		}
		if n, err := q.TryPopMany(dst); n > 0 || err != nil {
			return n, err
		}
	}
}
