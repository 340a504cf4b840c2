package kafkax

import (
	"sync/atomic"
	"time"
)

// flow bounds the records a source has emitted and that are not settled
// (MaxInFlight): the reader pauses fetching when the bound is reached and
// resumes when half of them are settled, or their partitions have moved.
type flow struct {
	high, low int64
	n         atomic.Int64  // records tracked and not settled, nor released
	paused    atomic.Bool   // the reader waits for wake
	wake      chan struct{} // cap 1

	pauses   atomic.Int64
	pausedNs atomic.Int64
}

func newFlow(max int) *flow {
	return &flow{high: int64(max), low: int64(max) / 2, wake: make(chan struct{}, 1)}
}

// add counts k more records in flight.
func (f *flow) add(k int) { f.n.Add(int64(k)) }

// done counts k records settled or released.
func (f *flow) done(k int) {
	if k == 0 {
		return
	}
	if n := f.n.Add(-int64(k)); f.paused.Load() && n <= f.low {
		signal(f.wake)
	}
}

// full reports whether the reader must pause.
func (f *flow) full() bool { return f.n.Load() >= f.high }

// room is how many records the next poll may take.
func (f *flow) room() int { return int(max(f.high-f.n.Load(), 1)) }

// open reports whether the reader may resume.
func (f *flow) open() bool { return f.n.Load() <= f.low }

// pause marks the reader paused; the returned function marks it resumed
// and counts the pause.
func (f *flow) pause() (resumed func()) {
	start := time.Now()
	f.pauses.Add(1)
	f.paused.Store(true)
	return func() {
		f.paused.Store(false)
		f.pausedNs.Add(int64(time.Since(start)))
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
