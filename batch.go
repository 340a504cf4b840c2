package sluice

import (
	"context"
	"fmt"
	"time"
)

// Batch starts a one-goroutine stage that groups the items of in, in order,
// into slices of at most size items. A batch leaves when it is full, when
// maxWait has passed since its first item arrived, or when in is drained;
// an empty batch never leaves. maxWait == 0 means no time limit;
// size == math.MaxInt means no size limit (batches by time alone). Each
// batch is a new slice that the receiver owns; it grows as items arrive
// (starting at the previous batch's length), so a large size costs no
// memory up front.
//
// Batches are handed on one at a time (the output edge's chunk size is 1
// unless [Chunk] says otherwise), so a batch is never held back behind the
// next; the output edge holds max(1, 2048/size) batches, and at least one
// chunk, unless [Buffer] says otherwise. The time limit is checked when a chunk of input arrives
// and by a timer while the input is idle; a batch may leave up to the
// processing time of one input chunk after maxWait.
func Batch[T any](p *Pipeline, name string, in Stream[T], size int, maxWait time.Duration, opts ...StageOption) Stream[[]T] {
	defer guard(p)
	if size < 1 {
		panic(fmt.Sprintf("sluice: Batch %q: size must be ≥ 1, got %d", name, size))
	}
	if maxWait < 0 {
		panic(fmt.Sprintf("sluice: Batch %q: maxWait must be ≥ 0, got %v", name, maxWait))
	}
	// By default the output holds about 2048 items' worth of batches,
	// handed on one at a time, and at least one chunk of a Chunk given.
	cfg := stageOptions(kindBatch, name, opts)
	if cfg.chunk == 0 {
		cfg.chunk = 1
	}
	if cfg.buffer == 0 {
		cfg.buffer = max(cfg.chunk, 2048/size)
	}
	s := newStage(p, kindBatch, name, 1)
	ie := consume(p, s, in, 1)
	ie.unmeasured()
	oe := newEdge[[]T](p, s, 1, cfg)
	oe.weigh = batchItems[T]
	w := s.workers[0]
	r := newReceiver(ie, 0, w)
	out := newSender(oe, 0, w)

	b := &batcher[T]{size: size, maxWait: maxWait, out: out, timer: time.NewTimer(time.Hour)}
	b.timer.Stop()
	loop(p, s, w, r, body[T]{
		each: func(c *chunk[T]) error {
			if !b.add(c.items, c.traces) {
				return errStopped
			}
			return nil
		},
		idle:  out.flush,
		alarm: b.alarm,
		ring:  func() bool { return b.emit() && out.flush() },
		end:   func() bool { return (len(b.batch) == 0 || b.emit()) && out.flush() },
	})
	return Stream[[]T]{oe}
}

// batcher is Batch's state, owned by its one goroutine.
type batcher[T any] struct {
	size    int
	maxWait time.Duration
	out     *sender[[]T]
	timer   *time.Timer
	batch   []T
	started time.Time // arrival of the batch's first item
	last    int       // length of the last batch to leave: the next one's first capacity
	// traces are the batch's items' traces when the pipeline traces
	// (see traceSlot); the batch leaves with a traceSet of them.
	traces []context.Context
}

// add appends items to the current batch, handing on each batch that
// fills, and the batch if it has waited maxWait. The batch grows as items
// arrive, starting at the last batch's length, so a batch that is never
// full (a size meant as "no limit") costs memory for its items only.
func (b *batcher[T]) add(items []T, trs []context.Context) bool {
	for len(items) > 0 {
		if b.batch == nil {
			b.batch = make([]T, 0, max(1, min(b.size, max(b.last, len(items)))))
			b.started = time.Now()
		}
		k := min(len(items), b.size-len(b.batch))
		b.batch = append(b.batch, items[:k]...)
		items = items[k:]
		if trs != nil {
			b.traces = append(b.traces, trs[:k]...)
			trs = trs[k:]
		}
		if len(b.batch) == b.size && !b.emit() {
			return false
		}
	}
	return len(b.batch) == 0 || b.maxWait == 0 || time.Since(b.started) < b.maxWait || b.emit()
}

// emit hands the current batch on.
func (b *batcher[T]) emit() bool {
	b.last = len(b.batch)
	if b.traces != nil {
		b.out.stampWith(newTraceSet(b.traces)) // keeps b.traces
		b.traces = nil
	}
	ok := b.out.send(b.batch)
	b.batch = nil
	return ok
}

// alarm returns a channel that fires when the current batch has waited
// maxWait, or nil if there is no batch or no time limit.
func (b *batcher[T]) alarm() <-chan time.Time {
	if len(b.batch) == 0 || b.maxWait == 0 {
		return nil
	}
	b.timer.Reset(b.maxWait - time.Since(b.started))
	return b.timer.C
}

// Unbatch starts a one-goroutine stage that sends on every item of every
// slice of in, in order.
func Unbatch[T any](p *Pipeline, name string, in Stream[[]T], opts ...StageOption) Stream[T] {
	defer guard(p)
	cfg := stageOptions(kindUnbatch, name, opts)
	s := newStage(p, kindUnbatch, name, 1)
	ie := consume(p, s, in, 1)
	oe := newEdge[T](p, s, 1, cfg)
	mapStage(p, s, ie, oe, func(_ int, w *worker, out *sender[T]) (func([][]T) error, *chain[[]T]) {
		return func(items [][]T) error {
			tin := w.tin // the batches' traces, when the pipeline traces
			for i, b := range items {
				for j, v := range b {
					if tin != nil {
						w.trace = traceAt(tin[i], j, len(b))
					}
					out.stamp()
					if !out.send(v) {
						return errStopped
					}
				}
			}
			return nil
		}, nil
	})
	return Stream[T]{oe}
}

// batchItems is the items in batches: a Batch's output edge weighs its
// chunks with it, so that its consumer counts items as well as batches.
func batchItems[T any](batches [][]T) int64 {
	var n int
	for _, b := range batches {
		n += len(b)
	}
	return int64(n)
}
