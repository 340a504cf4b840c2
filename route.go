package sluice

import (
	"context"
	"fmt"
)

// Merge starts a stage that sends on the items of every stream of ins, in
// no particular order across inputs; the order of each input is kept. The
// output closes when every input is drained. One goroutine per input;
// chunks are passed through, not copied. Its output edge holds two chunks
// (the backlog stays in the input edges), at least n items when it feeds a
// [ForEachChunk] with [Gather](n), or what [Buffer] says; [Chunk] and
// [OnFull] apply to it as to any stage's output. Panics if ins is empty.
func Merge[T any](p *Pipeline, name string, ins []Stream[T], opts ...StageOption) Stream[T] {
	defer guard(p)
	if len(ins) == 0 {
		panic(fmt.Sprintf("sluice: Merge %q: no input streams", name))
	}
	cfg := stageOptions(kindMerge, name, opts)
	// The backlog waits in the input edges, where it is counted per
	// input; the output only hands chunks over, so two slots do.
	cfg.slots = 2
	n := len(ins)
	s := newStage(p, kindMerge, name, n)
	edges := make([]*edge[T], n)
	for i, in := range ins {
		edges[i] = consume(p, s, in, 1)
	}
	oe := newEdge[T](p, s, n, cfg)
	for _, ie := range edges {
		ie.follow(oe) // Merge passes chunks on whole: oe's consumer sizes them
	}
	for i, w := range s.workers {
		out := newPassSender(oe, i, w)
		loop(p, s, w, newReceiver(edges[i], 0, w), body[T]{pass: out.handoff})
	}
	return Stream[T]{oe}
}

// Partition starts a one-goroutine stage that splits in into n streams by
// key: items with equal keys go to the same stream, in input order. Keys are
// spread by a hash seeded per stage, so the assignment differs between
// runs. Each output has the stage's options. One goroutine routes every
// item, so under the default [Block] policy an output whose consumer is
// slow holds up the others once its edge is full.
func Partition[T any, K comparable](p *Pipeline, name string, in Stream[T], n int, key func(T) K, opts ...StageOption) []Stream[T] {
	defer guard(p)
	if n < 1 {
		panic(fmt.Sprintf("sluice: Partition %q: n must be ≥ 1, got %d", name, n))
	}
	if key == nil {
		panic(fmt.Sprintf("sluice: Partition %q: nil key function", name))
	}
	hash := newKeyHash[K]()
	return fanOut(p, kindPartition, name, in, n, opts, func(items []T, trs []context.Context, w *worker, outs []*sender[T]) bool {
		for j, v := range items {
			if p.halted() {
				return false
			}
			if trs != nil {
				w.trace = trs[j]
			}
			i := hash.of(key(v)) % uint64(len(outs))
			outs[i].stamp()
			if !outs[i].send(v) {
				return false
			}
		}
		return true
	})
}

// Broadcast starts a one-goroutine stage that sends every item of in to
// each of n output streams, in input order. Items are copied by value: if
// T holds pointers, every consumer sees the same pointed-to data. The
// slowest consumer sets the pace (under the default Block policy). An item
// that carries a [Receipt] holds it once per copy, so its message is
// settled once every copy is.
func Broadcast[T any](p *Pipeline, name string, in Stream[T], n int, opts ...StageOption) []Stream[T] {
	defer guard(p)
	if n < 1 {
		panic(fmt.Sprintf("sluice: Broadcast %q: n must be ≥ 1, got %d", name, n))
	}
	rc := receiptsOf[T]()
	return fanOut(p, kindBroadcast, name, in, n, opts, func(items []T, trs []context.Context, w *worker, outs []*sender[T]) bool {
		if rc != nil && n > 1 {
			rc.each(items, settleOp{hold: int32(n - 1)}) // each copy settles once
		}
		for _, o := range outs {
			for j, v := range items {
				if trs != nil {
					w.trace = trs[j]
				}
				o.stamp()
				if !o.send(v) {
					return false
				}
			}
		}
		return true
	})
}

// fanOut starts a one-goroutine stage with n output streams; route sends
// each input chunk's items to them and returns false when the pipeline
// stopped.
func fanOut[T any](p *Pipeline, k stageKind, name string, in Stream[T], n int, opts []StageOption, route func(items []T, trs []context.Context, w *worker, outs []*sender[T]) bool) []Stream[T] {
	cfg := stageOptions(k, name, opts)
	s := newStage(p, k, name, 1)
	ie := consume(p, s, in, 1)
	w := s.workers[0]
	streams := make([]Stream[T], n)
	outs := make([]*sender[T], n)
	flushers := make([]flusher, n)
	for i := range outs {
		oe := newEdge[T](p, s, 1, cfg)
		oe.branch = fmt.Sprintf("output %d of stage %q (of its %d)", i, name, n)
		streams[i] = Stream[T]{oe}
		outs[i] = newSender(oe, 0, w)
		flushers[i] = outs[i]
	}
	ie.measured(0)
	flush := func() bool { return flushAll(flushers) }
	loop(p, s, w, newReceiver(ie, 0, w), body[T]{
		each: func(c *chunk[T]) error {
			if !route(c.items, c.traces, w, outs) {
				return errStopped
			}
			return nil
		},
		idle: flush,
		end:  flush,
		held: func(start, now int64) bool {
			for _, o := range outs {
				if !o.flushHeld(start, now) {
					return false
				}
			}
			return true
		},
	})
	return streams
}
