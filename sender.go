package sluice

import (
	"context"
	"runtime"
)

// sender is one producer goroutine's end of an edge. It fills a chunk and
// hands it over when it is full or when flush is called — which stages do
// whenever they would otherwise wait for input.
//
// The chunk being filled is kept as buf (its items at full length) and n
// (how many are set), so that adding an item stores the item and an int —
// no slice header, hence no write barrier for pointer-free T — and send
// stays small enough to inline into a stage's loop.
//
// A sender is written per item by one goroutine, so it is padded to 128
// bytes: senders of sibling workers are allocated side by side, and sharing
// a cache line would make every item a cross-core miss.
type sender[T any] struct {
	buf  []T
	n    int
	full func() bool // s.flush
	c    *chunk[T]
	e    *edge[T]
	sent *counter
	w    *worker
	hops uint64 // chunks handed off, for sampling
	// held is when the current chunk began holding items, as far as
	// flushHeld knows (0: not yet seen holding any).
	held     int64
	attached bool // the edge's consumer is built: its channel exists
	// tr is the current chunk's traces, at buf's length, when the
	// pipeline traces: send stamps each item with its worker's trace
	// (see traceSlot). Nil otherwise.
	tr []context.Context
	_  [15]byte // to 128 bytes
}

// newSender returns producer i's end of edge e, with a chunk to fill.
func newSender[T any](e *edge[T], i int, w *worker) *sender[T] {
	s := newPassSender(e, i, w)
	s.take(e.get())
	return s
}

// newPassSender returns producer i's end of edge e for a stage that only
// hands on whole chunks (handoff), so it needs no chunk of its own.
func newPassSender[T any](e *edge[T], i int, w *worker) *sender[T] {
	s := new(sender[T])
	s.init(e, i, w)
	return s
}

func (s *sender[T]) init(e *edge[T], i int, w *worker) {
	s.e, s.sent, s.w = e, e.sent[i], w
	s.full = s.fullChunk
}

// take makes c the chunk being filled. It clears the chunk first: a
// recycled chunk was last read by a consumer, often on another processor,
// and clearing it in one burst of wide stores takes its cache lines back
// here all at once, instead of one stalled line every few items as the
// stage writes (see docs/performance.md).
func (s *sender[T]) take(c *chunk[T]) {
	s.c, s.buf, s.n, s.held = c, c.items[:s.e.chunkLimit()], 0, 0
	clear(s.buf)
	if c.traces != nil { // put cleared them
		s.tr = c.traces[:len(s.buf)]
	}
}

// maxHold is how long a busy stage may hold items in a partial output chunk
// before handing it on. The chunk limit is set by the consumer's cost per
// item; a producer slower than that would otherwise keep its items until
// the chunk fills (a stage that never waits for input never flushes as
// idle). Four times chunkWork: a fast stage fills its chunks well within
// it, so only slow producers flush early.
const maxHold = 4 * chunkWork

// flushHeld hands the current chunk on if it has held items for maxHold,
// given that the input chunk just processed started at start and it is
// now now: items made during that chunk are counted from its start. It
// returns false when the pipeline stopped.
func (s *sender[T]) flushHeld(start, now int64) bool {
	if s.n == 0 {
		return true
	}
	if s.held == 0 {
		s.held = start
	}
	if now-s.held < maxHold {
		return true
	}
	return s.flush()
}

// send adds v to the current chunk, flushing it when full. It returns false
// when the pipeline has stopped; the caller must then return.
//
// The full-chunk path calls through the func value s.full (which is
// s.fullChunk) rather than the method: that keeps send under the inliner's
// budget (a direct call of the generic method costs more, as it passes a
// dictionary), which saves a call per item in every stage loop.
func (s *sender[T]) send(v T) bool {
	s.buf[s.n] = v
	s.n++
	return s.n < len(s.buf) || s.full()
}

// stamp sets the trace of the item the next send adds: the trace of the
// item at hand, which the stage set on its worker (see traceSlot). A
// stage calls it before each send when the pipeline may trace; without
// Tracing it is a nil check. (It is not part of send, which must stay
// small enough to inline.)
func (s *sender[T]) stamp() {
	if s.tr != nil {
		s.tr[s.n] = s.w.trace
	}
}

// stampWith sets tr as the trace of the item the next send adds, when
// the pipeline traces: an item made of others (a batch, a window).
func (s *sender[T]) stampWith(tr context.Context) {
	if s.tr != nil {
		s.tr[s.n] = tr
	}
}

// space returns the free part of the current chunk, never empty. A stage
// may write items there and then commit them.
func (s *sender[T]) space() []T { return s.buf[s.n:] }

// traceSpace is the traces beside space, for the stage to write each
// item's trace there before it commits them; nil when the pipeline does
// not trace.
func (s *sender[T]) traceSpace() []context.Context {
	if s.tr == nil {
		return nil
	}
	return s.tr[s.n:]
}

// commit adds the first k items of the last space to the chunk, flushing it
// when full. It returns false when the pipeline has stopped.
func (s *sender[T]) commit(k int) bool {
	s.n += k
	return s.n < len(s.buf) || s.fullChunk()
}

// fullChunk is the path of send and commit when the chunk is full at the
// limit it was taken with. If the consumer has raised the limit since —
// the first chunks of an edge are taken before its consumer has measured,
// or before a consumer that wants full chunks is built — the chunk grows
// instead of leaving, so the first chunks are not needlessly small.
func (s *sender[T]) fullChunk() bool {
	if lim := s.e.chunkLimit(); lim > len(s.buf) {
		s.buf = s.c.items[:lim] // chunks have room for the edge's size
		if s.tr != nil {
			s.tr = s.c.traces[:lim]
		}
		return true
	}
	return s.flush()
}

// flush hands the current chunk, if it holds anything, to the consumer. It
// blocks while the edge is full under the Block policy. It returns false
// when the pipeline has stopped.
func (s *sender[T]) flush() bool {
	if s.n == 0 {
		return !s.e.p.stopping()
	}
	s.c.items = s.buf[:s.n]
	if s.tr != nil {
		s.c.traces = s.tr[:s.n]
		if s.e.begin != nil {
			s.e.begin(s.c)
		}
	}
	if !s.handoff(s.c) {
		s.c.items = s.c.items[:0]
		s.n = 0
		return false
	}
	s.take(s.e.get())
	return true
}

// handoff gives chunk c to the consumer, or to the overflow policy, and
// counts it. The caller no longer owns c afterwards unless it returns
// false, when the pipeline has stopped.
func (s *sender[T]) handoff(c *chunk[T]) bool {
	n := len(c.items)
	if s.e.p.stopping() || (!s.attached && !s.awaitConsumer()) {
		return false
	}
	c.born = 0
	if s.hops++; s.hops&sampleMask == 0 {
		c.born = nowNs()
	}
	select {
	case s.e.ch <- c:
	default:
		switch s.e.policy {
		case DropNewest:
			// Counted as sent and as dropped, as DropOldest's evictions
			// are: the stage handed the items on, its edge discarded them.
			s.e.dropped.Add(int64(n))
			s.e.receipts.each(c.items, ack)
			s.e.put(c)
		case DropOldest:
			s.evictAndSend(c)
		default:
			if !s.blockingSend(c) {
				return false
			}
		}
	}
	s.sent.add(n)
	return true
}

// awaitConsumer waits until the edge's consumer is built (and with it the
// edge's channel); false if the pipeline stopped first. A producer that
// starts before its consumer exists waits here once.
func (s *sender[T]) awaitConsumer() bool {
	select {
	case <-s.e.attached:
	default:
		s.w.waitRoom()
		defer s.w.resume()
		select {
		case <-s.e.attached:
		case <-s.e.p.ctx.Done():
			return false
		}
	}
	s.attached = true
	return true
}

// spinRounds bounds how many times a stage yields (runtime.Gosched) waiting
// for input or room before it parks. Parking lets the processor go idle,
// and waking an idle processor costs tens of microseconds; a few yields
// keep both sides busy under load, so that the producer and consumer of an
// edge run in parallel. An idle stage spends a few microseconds yielding
// before it parks. (The choice of 20 is measured in docs/performance.md.)
const spinRounds = 20

// blockingSend waits for room for c. The yields count as waiting for room
// too: other goroutines run meanwhile, and a consumer that measures its own
// work (see receiver.tune) must not count theirs.
func (s *sender[T]) blockingSend(c *chunk[T]) bool {
	s.w.waitRoom()
	defer s.w.resume()
	for range spinRounds {
		if len(s.e.ch) < cap(s.e.ch) {
			select {
			case s.e.ch <- c:
				return true
			default:
			}
		}
		runtime.Gosched()
	}
	select {
	case s.e.ch <- c:
		return true
	case <-s.e.p.ctx.Done():
		return false
	}
}

// evictAndSend makes room by discarding the oldest chunks until c fits.
// Another producer may refill the freed slot first, hence the loop; each
// round either sends or evicts, so it ends.
func (s *sender[T]) evictAndSend(c *chunk[T]) {
	for {
		select {
		case s.e.ch <- c:
			return
		default:
		}
		select {
		case old := <-s.e.ch:
			s.e.dropped.Add(int64(len(old.items)))
			s.e.receipts.each(old.items, ack)
			s.e.put(old)
		default:
		}
	}
}

// flushAll hands a stage's partial chunks on; false means the pipeline
// stopped.
func flushAll(outs []flusher) bool {
	for _, o := range outs {
		if !o.flush() {
			return false
		}
	}
	return true
}

// flusher is a sender of any element type.
type flusher interface{ flush() bool }
