package kafkax

import (
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// redeliveries holds the records settled with a failure that are to be
// emitted again (Redeliver), each once its delay has passed.
type redeliveries struct {
	mu    sync.Mutex
	queue []redelivery // in due order: every one waits the same delay
}

type redelivery struct {
	p        *partition
	seq      uint64
	rec      *kgo.Record
	delivery int32 // the delivery it will be
	due      time.Time
}

func (q *redeliveries) add(r redelivery) {
	q.mu.Lock()
	q.queue = append(q.queue, r)
	q.mu.Unlock()
}

// take removes and returns the redeliveries that are due and whose
// partition is owned. Those of a partition that moved are dropped (the
// flow stopped counting them when it was released); those of a held one
// wait until it is assigned here again, or moves.
func (q *redeliveries) take(now time.Time) []redelivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	var due []redelivery
	q.queue = slices.DeleteFunc(q.queue, func(r redelivery) bool {
		switch {
		case r.p.is(gone):
			return true
		case r.due.After(now) || !r.p.is(owned):
			return false
		}
		due = append(due, r)
		return true
	})
	return due
}

// next returns when the first redelivery of an owned partition is due;
// false if none waits.
func (q *redeliveries) next() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range q.queue {
		if r.p.is(owned) {
			return r.due, true
		}
	}
	return time.Time{}, false
}

// pending reports whether a redelivery waits.
func (q *redeliveries) pending() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue) > 0
}
