package sluice

import (
	"context"
	"fmt"
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
// never consumed. Its producer hands nothing on before the consumer is
// built (the consumer sizes the queue: see [Gather]), so build a stream's
// consumer before waiting for anything downstream of its producer:
// [Result.Value] and a loop over [ToSeq] panic at once, naming the
// stream, when they would wait below a stream with no consumer. The zero
// Stream is not usable.
type Stream[T any] struct{ e *edge[T] }

// Name returns the name of the stage that produces the stream.
func (s Stream[T]) Name() string {
	if s.e == nil {
		return "<zero Stream>"
	}
	return s.e.from.name
}

// chunk is the unit that crosses goroutines. It belongs to the pool of the
// edge that made it and goes back there when its last reader is done, even
// after it was passed on to another edge (as Merge does).
type chunk[T any] struct {
	items []T
	// traces holds, beside items, the trace of each item when the
	// pipeline traces (see traceSlot); nil otherwise, and then nothing
	// per item is written or read for tracing.
	traces []context.Context
	seq    uint64     // arrival order, for the stages that keep input order
	born   int64      // when it was handed to its edge (nowNs), for sampled chunks; else 0
	home   *sync.Pool // the pool of the edge that made it
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

func newCounters(n int) []*counter {
	cs := make([]*counter, n)
	for i := range cs {
		cs[i] = new(counter)
	}
	return cs
}

// edge is the machinery behind a Stream: a channel of chunks, the pool they
// are recycled through, the chunk size its consumer asks for, and counters.
type edge[T any] struct {
	p    *Pipeline
	from *stage
	to   atomic.Pointer[stage]

	// ch is made when the consumer attaches (consume), so that its
	// capacity can follow what the consumer needs (see Gather); until
	// then senders wait on attached, closed once ch is set. mu orders an
	// early close (a producer done before its consumer is built) with the
	// attach.
	ch       chan *chunk[T]
	slots    int  // chunks ch holds, unless the consumer needs more
	sized    bool // slots was set by Buffer: the consumer keeps it
	attached chan struct{}
	mu       sync.Mutex
	closed   bool // the producers are done; ch is closed once it exists

	size   int  // most items per chunk
	fixed  bool // size was set by the Chunk option: no adaptive sizing
	policy Overflow
	pool   sync.Pool

	// Per-goroutine tallies, registered before any goroutine starts; the
	// slices are never appended to afterwards.
	sent  []*counter // items each producer put into ch
	recvd []*counter // items each consumer took out of ch
	// weigh counts the items inside a chunk's items, for an edge whose
	// items are batches (a Batch's output); nil otherwise. recvdItems,
	// made with recvd when weigh is set, is what each consumer took.
	weigh      func(items []T) int64
	recvdItems []*counter
	// begin starts the traces of a source's items as a chunk of them is
	// handed on (sourceTraces); nil for other edges, or without Tracing.
	begin func(c *chunk[T])
	// traced: the pipeline traces, so the chunks carry traces.
	traced bool

	scrub       bool // T holds pointers: clear recycled chunks so they keep nothing alive
	deadLetters bool // a stage's dead-letter stream (DeadLetter): not counted in its Out
	// branch names one of several outputs of a stage (Partition,
	// Broadcast), as messages show it: "output 1 of stage "split""; "" for
	// a stage's only output.
	branch string

	// spinning is held by the one consumer that yields waiting for input;
	// the others park at once, so idle workers do not churn the scheduler.
	spinning atomic.Bool

	// dropped is the items discarded by the overflow policy (slow path
	// only): sent, but never received.
	dropped atomic.Int64
	// receipts settles what the overflow policy discards; nil when T
	// carries no receipt (see Receipt).
	receipts receipts[T]

	// limit is how many items (≤ size) a sender puts in a chunk before it
	// hands the chunk on. It starts at one item; a consumer that measures
	// its work raises it within a few chunks (see receiver.tune), so that
	// cheap items travel in full chunks and slow ones spread over the
	// consumer's workers from the first item; a consumer that regroups
	// items sets it to size. ceil caps what tuning may ask for (OrderedMap
	// keeps chunks small enough that its window holds one per worker).
	// Senders read limit once per chunk; adapt says whether the consumer
	// measures.
	limit atomic.Int64
	ceil  int
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

// Limits on the options, so that a bad value fails with a clear message
// instead of a runtime allocation error.
const (
	maxChunk      = 1 << 20 // items per chunk
	maxChunkSlots = 1 << 20 // chunks an edge's channel holds
)

// measured marks e as consumed by a stage whose receivers measure their
// work per chunk and tune e.limit; ceil, if > 0, caps the size they may
// ask for. Called at construction, before the consumer's goroutines start.
func (e *edge[T]) measured(ceil int) {
	e.adapt = !e.fixed
	if ceil > 0 && !e.fixed {
		e.ceil = min(ceil, e.size)
	}
}

// unmeasured marks e as consumed by a stage that does not measure (it
// regroups items, or its cost is per call): full chunks from now on.
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
// goroutines. It panics if the options ask for more than an edge can hold.
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
	if cfg.slots > 0 {
		chunks = cfg.slots
	}
	if cfg.buffer > 0 {
		size = min(size, cfg.buffer)
		chunks = cfg.buffer/size + min(1, cfg.buffer%size)
	}
	if size > maxChunk {
		panic(fmt.Sprintf("sluice: stage %q: Chunk(%d) is more than the %d items a chunk may hold", from.name, size, maxChunk))
	}
	if chunks > maxChunkSlots {
		panic(fmt.Sprintf("sluice: stage %q: Buffer(%d) in chunks of %d items needs %d chunk slots, more than the %d an edge may have; use larger chunks or a smaller buffer",
			from.name, cfg.buffer, size, chunks, maxChunkSlots))
	}
	e := &edge[T]{
		p: p, from: from, slots: chunks, sized: cfg.buffer > 0,
		attached: make(chan struct{}), size: size,
		policy: cfg.overflow, scrub: gctype.HasPointers[T](),
		fixed: cfg.chunk != 0, ceil: size, traced: p.tracer != nil,
	}
	if cfg.overflow != Block {
		e.receipts = receiptsOf[T]()
	}
	if e.fixed {
		e.limit.Store(int64(size))
	} else {
		e.limit.Store(1)
	}
	e.sent = newCounters(producers)
	p.addEdge(from, e)
	return e
}

// consume marks the stream as consumed by stage s, with consumers
// goroutines. It panics on programmer error.
func consume[T any](p *Pipeline, s *stage, in Stream[T], consumers int) *edge[T] {
	return consumeHolding(p, s, in, consumers, 0)
}

// consumeHolding is consume for a stage that wants hold items to be able
// to wait in the stream while its goroutines are busy (Gather): unless the
// producer's Buffer says otherwise, the edge then holds at least that
// many in full chunks.
func consumeHolding[T any](p *Pipeline, s *stage, in Stream[T], consumers, hold int) *edge[T] {
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
	recvd := newCounters(consumers)
	var recvdItems []*counter
	if e.weigh != nil {
		recvdItems = newCounters(consumers)
	}
	slots := e.slots
	if !e.sized && hold > 0 {
		slots = min(max(slots, (hold+e.size-1)/e.size), maxChunkSlots)
	}
	p.mu.Lock() // Stats may be reading the graph
	e.recvd, e.recvdItems = recvd, recvdItems
	s.ins = append(s.ins, e)
	e.mu.Lock()
	e.ch = make(chan *chunk[T], slots)
	if e.closed {
		close(e.ch)
	}
	e.mu.Unlock()
	p.mu.Unlock()
	close(e.attached)
	return e
}

// get returns an empty chunk of this edge, recycled when one is free.
func (e *edge[T]) get() *chunk[T] {
	if c, _ := e.pool.Get().(*chunk[T]); c != nil {
		return c
	}
	c := &chunk[T]{items: make([]T, 0, e.size), home: &e.pool}
	if e.traced {
		c.traces = make([]context.Context, 0, e.size)
	}
	return c
}

// put recycles a chunk whose items the caller no longer needs, into the
// pool of the edge that made it. Items that hold pointers are cleared so
// that a recycled chunk keeps nothing alive.
func (e *edge[T]) put(c *chunk[T]) {
	if e.scrub {
		clear(c.items)
	}
	c.items = c.items[:0]
	if c.traces != nil {
		clear(c.traces[:cap(c.traces)])
		c.traces = c.traces[:0]
	}
	c.home.Put(c)
}

// close is called once, when every goroutine of the producing stage has
// exited, whatever the reason; if the consumer is not built yet, its
// channel is made closed.
func (e *edge[T]) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	if e.ch != nil {
		close(e.ch)
	}
}

// edgeInfo is the type-independent view of an edge: what Wait (streams
// nobody consumes), a stage closing its outputs and Stats read of it.
type edgeInfo interface {
	name() string
	deadLetter() bool
	branchName() string
	producer() *stage
	consumer() *stage
	stats() EdgeStats
	close()
}

func (e *edge[T]) name() string       { return e.from.name }
func (e *edge[T]) deadLetter() bool   { return e.deadLetters }
func (e *edge[T]) branchName() string { return e.branch }
func (e *edge[T]) producer() *stage   { return e.from }
func (e *edge[T]) consumer() *stage   { return e.to.Load() }
