package chans

import "github.com/sluicehq/sluice/internal/gctype"

// queue is a FIFO over a linked list of blocks of equal size. Values are
// written at tail.v[ti] and read from head.v[hi]; a full tail block gets a
// successor, and a head block read to its end is unlinked. Values never move
// once written: growing links a block, shrinking unlinks one, and neither
// copies anything.
//
// Memory follows the length in steps of one block: the list holds the
// values plus the unused ends of its first and last blocks, so at most
// len + 2·size − 1 slots, plus one spare block kept while the list is a
// single block (so that a queue whose length hovers around a block boundary
// does not allocate and drop a block each time it crosses it). An empty
// queue holds one block and perhaps the spare: twice the block size.
//
// (The earlier ring, which doubled and halved and copied its values each
// time, kept memory within 4× the length but spent a quarter of a
// concurrent benchmark's time resizing, mostly under the Elastic's mutex.)
//
// Not safe for concurrent use.
type queue[T any] struct {
	head, tail *block[T]
	hi, ti     int // next slot to read in head, next slot to write in tail
	n          int
	size       int       // slots per block
	spare      *block[T] // nil unless the list is a single block
	// scrub is set when T holds pointers: slots are cleared as they are
	// read, so the queue keeps nothing reachable that it has handed out.
	scrub bool
}

type block[T any] struct {
	next *block[T]
	v    []T
}

// minBlock is the smallest block: below it, linking a block per few values
// would cost more than the memory it saves.
const minBlock = 16

// newQueue returns an empty queue whose blocks hold max(capacity, minBlock)
// values.
func newQueue[T any](capacity int) queue[T] {
	return newBlockQueue[T](max(capacity, minBlock))
}

// newBlockQueue returns an empty queue of blocks of size ≥ 1 values.
func newBlockQueue[T any](size int) queue[T] {
	b := &block[T]{v: make([]T, size)}
	return queue[T]{head: b, tail: b, size: size, scrub: gctype.HasPointers[T]()}
}

func (q *queue[T]) len() int { return q.n }

func (q *queue[T]) push(v T) {
	if q.ti == len(q.tail.v) {
		q.link()
	}
	q.tail.v[q.ti] = v
	q.ti++
	q.n++
}

// pushAll appends vs in order, one copy per block it fills.
func (q *queue[T]) pushAll(vs []T) {
	for len(vs) > 0 {
		if q.ti == len(q.tail.v) {
			q.link()
		}
		k := copy(q.tail.v[q.ti:], vs)
		q.ti += k
		q.n += k
		vs = vs[k:]
	}
}

// link gives the full tail block a successor: the spare, or a new block.
func (q *queue[T]) link() {
	b := q.spare
	if b != nil {
		q.spare = nil
	} else {
		b = &block[T]{v: make([]T, q.size)}
	}
	q.tail.next = b
	q.tail, q.ti = b, 0
}

// pop removes and returns the oldest value; the queue must not be empty.
func (q *queue[T]) pop() T {
	v := q.head.v[q.hi]
	if q.scrub {
		var zero T
		q.head.v[q.hi] = zero
	}
	q.hi++
	q.n--
	q.read()
	return v
}

// popInto moves up to len(dst) of the oldest values into dst, oldest first,
// and returns how many: one copy per block it empties.
func (q *queue[T]) popInto(dst []T) int {
	moved := 0
	for moved < len(dst) && q.n > 0 {
		end := len(q.head.v)
		if q.head == q.tail {
			end = q.ti
		}
		src := q.head.v[q.hi:end]
		k := copy(dst[moved:], src)
		if q.scrub {
			clear(src[:k])
		}
		q.hi += k
		q.n -= k
		moved += k
		q.read()
	}
	return moved
}

// read follows a read: an empty queue rewinds to the start of its block,
// and a head block read to its end is unlinked.
func (q *queue[T]) read() {
	if q.n == 0 {
		// Only a single block can be empty: a head block read to its end
		// is unlinked before the next value is read.
		q.hi, q.ti = 0, 0
		return
	}
	if q.hi < len(q.head.v) {
		return
	}
	old := q.head
	q.head, q.hi = old.next, 0
	old.next = nil
	if q.head == q.tail && q.spare == nil {
		q.spare = old // its slots were cleared as they were read
	}
}

// reset empties the queue, leaving one block.
func (q *queue[T]) reset() {
	b := &block[T]{v: make([]T, q.size)}
	q.head, q.tail, q.hi, q.ti, q.n, q.spare = b, b, 0, 0, 0, nil
}

// peek returns the oldest value without removing it; the queue must not be
// empty.
func (q *queue[T]) peek() T { return q.head.v[q.hi] }
