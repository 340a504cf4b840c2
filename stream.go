package sluice

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sluicehq/sluice/internal/gctype"
)

// Stream is an edge between two stages: a bounded queue that carries items of
// type T from the goroutines of the stage that made it to the goroutines of
// the one stage that consumes it. Items travel in recycled chunks (see the
// package documentation), so a hop costs a few nanoseconds per item, not a
// channel operation.
//
// A Stream is a handle; copying it copies the handle. Each stream must be
// consumed by exactly one stage or sink of the same pipeline: a second
// consumer panics at construction, and [Pipeline.Wait] panics if a stream is
// never consumed. The zero Stream is not usable.
type Stream[T any] struct{ e *edge[T] }

// Name returns the name of the stage that produces the stream.
func (s Stream[T]) Name() string {
	if s.e == nil {
		return "<zero Stream>"
	}
	return s.e.from.name
}

// chunk is the unit that crosses goroutines. seq orders chunks for the
// stages that keep input order.
type chunk[T any] struct {
	items []T
	seq   uint64
	born  int64 // when it was handed to its edge (nowNs), for sampled chunks; else 0
}

// sampleMask picks the chunks whose latency is measured: one in 8, so that
// reading the clock costs well under a nanosecond per item.
const sampleMask = 7

// counter is a per-goroutine tally padded to its own cache line, so that a
// goroutine updating its own counter never contends with another's.
type counter struct {
	n atomic.Int64
	_ [56]byte
}

// add is called only by the counter's owning goroutine; a load and a store
// are enough, and readers see a consistent (if slightly stale) value.
func (c *counter) add(n int) { c.n.Store(c.n.Load() + int64(n)) }

// edge is the machinery behind a Stream.
type edge[T any] struct {
	p    *Pipeline
	from *stage
	to   atomic.Pointer[stage]

	ch     chan *chunk[T]
	size   int  // most items per chunk
	fixed  bool // size was set by the Chunk option: no adaptive sizing
	policy Overflow
	pool   sync.Pool

	// Per-goroutine tallies, registered before any goroutine starts; the
	// slices are never appended to afterwards.
	sent  []*counter // items each producer put into ch
	recvd []*counter // items each consumer took out of ch

	scrub bool // T holds pointers: clear recycled chunks so they keep nothing alive

	// spinning is held by the one consumer that yields waiting for input;
	// the others park at once, so idle workers do not churn the scheduler.
	spinning atomic.Bool

	dropped atomic.Int64 // items discarded by the overflow policy (slow path only)
	evicted atomic.Int64 // of those, items taken back out of ch by DropOldest

	// limit is how many items (≤ size) a sender puts in a chunk before it
	// hands the chunk on. It starts small; a consumer that measures sets it
	// (see tune), so that cheap items travel in full chunks and slow ones
	// spread over the consumer's workers; another consumer sets it to size.
	// Fixed at size by the Chunk option. Senders read it once per chunk.
	// adapt says whether the consumer measures.
	limit atomic.Int64
	adapt bool
	// next, when set, is the edge a pass-through stage (Merge) hands these
	// chunks on to: senders then size chunks by the limit at the end of
	// that chain, which is set by the stage that works on them (see
	// follow).
	next atomic.Pointer[edge[T]]
}

// chunkWork is how long a consumer should spend on one chunk, in ns, when
// its edge adapts: long enough that the per-chunk costs (a channel
// operation, recycling) are a few percent of it, short enough that a
// stage's workers share slow items fairly and a chunk left at the end of
// the input does not keep one worker busy while the others idle.
const chunkWork = 50_000

// firstLimit is the chunk size an edge starts with, before its consumer
// has measured anything: small, so that a few slow items are spread over
// the workers from the start.
const firstLimit = 16

// measured marks e as consumed by a stage whose receivers measure their
// work per chunk and tune e.limit. Called at construction, before the
// consumer's goroutines start.
func (e *edge[T]) measured() { e.adapt = !e.fixed }

// unmeasured marks e as consumed by a stage that does not measure (it
// regroups items): full chunks from now on.
func (e *edge[T]) unmeasured() { e.limit.Store(int64(e.size)) }

// follow makes e's senders size their chunks by next's limit: e's consumer
// passes e's chunks on to next unchanged, so next's consumer is the one
// whose work they are.
func (e *edge[T]) follow(next *edge[T]) { e.next.Store(next) }

// chunkLimit is the number of items a sender puts in its next chunk: the
// limit of the last edge in e's chain of pass-through stages, at most e's
// own size. Called once per chunk.
func (e *edge[T]) chunkLimit() int {
	x := e
	for n := x.next.Load(); n != nil; n = x.next.Load() {
		x = n
	}
	return min(e.size, int(x.limit.Load()))
}

// newEdge makes the output edge of stage from, written by producers
// goroutines.
func newEdge[T any](p *Pipeline, from *stage, producers int, cfg stageConfig) *edge[T] {
	size := cfg.chunk
	if size == 0 {
		size = DefaultChunk
		var zero T
		if es := int(unsafe.Sizeof(zero)); es > 0 && size*es > 16<<10 {
			size = max(16, (16<<10)/es)
		}
	}
	chunks := defaultChunks
	if cfg.buffer > 0 {
		size = min(size, cfg.buffer)
		chunks = (cfg.buffer + size - 1) / size
	}
	e := &edge[T]{
		p: p, from: from, ch: make(chan *chunk[T], chunks), size: size,
		policy: cfg.overflow, scrub: gctype.HasPointers[T](),
		fixed: cfg.chunk != 0,
	}
	e.limit.Store(int64(size))
	if !e.fixed {
		e.limit.Store(int64(min(size, firstLimit)))
	}
	e.sent = make([]*counter, producers)
	for i := range e.sent {
		e.sent[i] = new(counter)
	}
	p.addEdge(from, e)
	return e
}

// consume marks the stream as consumed by stage s, with consumers
// goroutines. It panics on programmer error.
func consume[T any](p *Pipeline, s *stage, in Stream[T], consumers int) *edge[T] {
	e := in.e
	if e == nil {
		panic(fmt.Sprintf("sluice: stage %q: input is a zero Stream", s.name))
	}
	if e.p != p {
		panic(fmt.Sprintf("sluice: stage %q: input stream from stage %q belongs to pipeline %q, not %q",
			s.name, e.from.name, e.p.name, p.name))
	}
	if !e.to.CompareAndSwap(nil, s) {
		panic(fmt.Sprintf("sluice: stage %q: stream from stage %q is already consumed by stage %q",
			s.name, e.from.name, e.to.Load().name))
	}
	recvd := make([]*counter, consumers)
	for i := range recvd {
		recvd[i] = new(counter)
	}
	p.mu.Lock() // Stats may be reading the graph
	e.recvd = recvd
	s.ins = append(s.ins, e)
	p.mu.Unlock()
	return e
}

// get returns an empty chunk, recycled when one is free.
func (e *edge[T]) get() *chunk[T] {
	if c, _ := e.pool.Get().(*chunk[T]); c != nil && cap(c.items) >= e.size {
		return c
	}
	return &chunk[T]{items: make([]T, 0, e.size)}
}

// put recycles a chunk whose items the caller no longer needs. Items that
// hold pointers are cleared so that a recycled chunk keeps nothing alive.
func (e *edge[T]) put(c *chunk[T]) {
	if e.scrub {
		clear(c.items)
	}
	c.items = c.items[:0]
	e.pool.Put(c)
}

// close is called once, when every goroutine of the producing stage has
// exited, whatever the reason.
func (e *edge[T]) close() { close(e.ch) }

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
	hops uint64   // chunks handed off, for sampling
	_    [48]byte // to 128 bytes
}

func newSender[T any](e *edge[T], i int, w *worker) *sender[T] {
	s := new(sender[T])
	s.init(e, i, w)
	return s
}

// init readies s as producer i of edge e.
func (s *sender[T]) init(e *edge[T], i int, w *worker) {
	s.e, s.sent, s.w = e, e.sent[i], w
	s.full = s.flush
	s.take(e.get())
}

// take makes c the chunk being filled. It clears the chunk first: a
// recycled chunk was last read by a consumer, often on another processor,
// and clearing it in one burst of wide stores takes its cache lines back
// here all at once, instead of one stalled line every few items as the
// stage writes. On the squares workload (50M values, 2 vCPUs) this took
// the sluice run from 60–70M values/s to 95–100M when the two vCPUs are
// far apart in cache, and changed nothing (~155M) when they are close.
func (s *sender[T]) take(c *chunk[T]) {
	s.c, s.buf, s.n = c, c.items[:s.e.chunkLimit()], 0
	clear(s.buf)
}

// send adds v to the current chunk, flushing it when full. It returns false
// when the pipeline has stopped; the caller must then return.
//
// The full-chunk path calls through the func value s.full (which is
// s.flush) rather than the method: that keeps send under the inliner's
// budget (cost 79 of 80; a direct call of the generic method costs more,
// as it passes a dictionary), which saves a call per item in every stage
// loop.
func (s *sender[T]) send(v T) bool {
	s.buf[s.n] = v
	s.n++
	return s.n < len(s.buf) || s.full()
}

// space returns the free part of the current chunk, never empty. A stage
// may write items there and then commit them.
func (s *sender[T]) space() []T { return s.buf[s.n:] }

// commit adds the first k items of the last space to the chunk, flushing it
// when full. It returns false when the pipeline has stopped.
func (s *sender[T]) commit(k int) bool {
	s.n += k
	return s.n < len(s.buf) || s.flush()
}

// flush hands the current chunk, if it holds anything, to the consumer. It
// blocks while the edge is full under the Block policy. It returns false
// when the pipeline has stopped.
func (s *sender[T]) flush() bool {
	if s.n == 0 {
		return !s.e.p.stopped()
	}
	s.c.items = s.buf[:s.n]
	if !s.handoff(s.c) {
		s.c.items = s.c.items[:0]
		return false
	}
	s.take(s.e.get())
	return true
}

// handoff gives chunk c to the consumer, or to the overflow policy, and
// counts it. The caller no longer owns c afterwards. It returns false when
// the pipeline has stopped.
func (s *sender[T]) handoff(c *chunk[T]) bool {
	n := len(c.items)
	if s.e.p.stopped() {
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
			s.e.dropped.Add(int64(n))
			s.e.put(c)
			return true
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

// spinRounds bounds how many times a stage yields (runtime.Gosched) waiting
// for input or room before it parks. Parking lets the processor go idle,
// and waking an idle processor costs 80–140 µs on the 2-vCPU machines we
// measure on; a few yields keep both processors busy under load, so that
// the producer and consumer of an edge run in parallel. Measured on the
// squares workload (50M values, median of 3 runs each; single runs vary
// widely): 0 rounds 93M values/s, 10 rounds 114M, 20 rounds 163M, 50
// rounds 137M. An idle stage spends ~20 yields (a few µs) before it parks.
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
			n := int64(len(old.items))
			s.e.dropped.Add(n)
			s.e.evicted.Add(n)
			s.e.put(old)
		default:
		}
	}
}

// receiver is one consumer goroutine's end of an edge.
type receiver[T any] struct {
	e     *edge[T]
	recvd *counter
	w     *worker

	// On an adaptive edge: when the current chunk was taken and the
	// worker's blocked time then (t0 == 0: not measuring), and how many
	// chunks in a row asked for a smaller limit.
	t0, b0  int64
	shrinks int
}

func newReceiver[T any](e *edge[T], i int, w *worker) *receiver[T] {
	return &receiver[T]{e: e, recvd: e.recvd[i], w: w}
}

// release records the chunk's latency, if it was sampled, and recycles it:
// the stage has finished with it.
func (r *receiver[T]) release(c *chunk[T]) {
	if r.t0 != 0 {
		r.tune(len(c.items))
	}
	r.observe(c)
	r.e.put(c)
}

// took starts measuring the chunk just taken, on an adaptive edge.
func (r *receiver[T]) took() {
	if r.e.adapt {
		r.t0, r.b0 = nowNs(), r.w.blocked.Load()
	}
}

// tune sets the edge's chunk limit from how long the worker spent on the
// n items of the chunk it took last, not counting its waits: a chunk
// should take about chunkWork. Limits are powers of two (or the edge's
// size). A larger limit is set at once; a smaller one only after four
// chunks in a row asked for it, so that one chunk slowed by preemption or
// a GC assist does not shrink the chunks of a fast stage.
func (r *receiver[T]) tune(n int) {
	busy := nowNs() - r.t0 - (r.w.blocked.Load() - r.b0)
	r.t0 = 0
	if n == 0 {
		return
	}
	want := int64(chunkWork) * int64(n) / max(busy, 1)
	want = min(int64(r.e.size), 1<<(bits.Len64(uint64(max(want, 1)))-1))
	cur := r.e.limit.Load()
	switch {
	case want > cur:
		r.e.limit.Store(want)
		r.shrinks = 0
	case want < cur:
		if r.shrinks++; r.shrinks >= 4 {
			r.e.limit.Store(want)
			r.shrinks = 0
		}
	default:
		r.shrinks = 0
	}
}

// observe records, for a sampled chunk, the time from its hand-off to the
// input edge until now.
func (r *receiver[T]) observe(c *chunk[T]) {
	if c.born != 0 {
		r.w.lat.record(nowNs() - c.born)
	}
}

// next returns the next chunk, or nil when the edge is closed and drained
// or the pipeline has stopped (the caller tells which by p.stopped()). If no
// chunk is ready, idle is called before blocking: stages pass a function
// that flushes their partial output chunks, which is what keeps latency low
// when input trickles. The caller gives the chunk back with e.put.
func (r *receiver[T]) next(idle func() bool) *chunk[T] {
	if r.e.p.stopped() {
		return nil
	}
	select {
	case c, ok := <-r.e.ch:
		if !ok {
			return nil
		}
		r.recvd.add(len(c.items))
		r.took()
		return c
	default:
	}
	if idle != nil && !idle() {
		return nil
	}
	if r.e.spinning.CompareAndSwap(false, true) {
		for range spinRounds {
			if len(r.e.ch) > 0 {
				break
			}
			runtime.Gosched()
		}
		r.e.spinning.Store(false)
	}
	r.w.waitInput()
	var c *chunk[T]
	select {
	case c = <-r.e.ch: // nil once the edge is closed and drained
	case <-r.e.p.ctx.Done():
	}
	// The wait ends before the chunk's measurement starts: tune subtracts
	// only the waits within the chunk.
	r.w.resume()
	if c == nil {
		return nil
	}
	r.recvd.add(len(c.items))
	r.took()
	return c
}
