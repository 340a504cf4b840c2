package chans

// queue is a FIFO over a power-of-two ring with free-running indexes (the
// layout seed 001 describes): head and tail only ever increase, tail-head is
// the length, and slot x lives at buf[x&mask]. Wrap-around of the uint
// indexes is harmless because only their difference and their low bits are
// used. It grows by doubling when full and shrinks by halving when a quarter
// full, never below min. Not safe for concurrent use.
type queue[T any] struct {
	buf        []T
	head, tail uint
	min        int
}

// newQueue returns an empty queue whose ring never shrinks below
// ceilPow2(capacity).
func newQueue[T any](capacity int) queue[T] {
	n := ceilPow2(capacity)
	return queue[T]{buf: make([]T, n), min: n}
}

func ceilPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

func (q *queue[T]) len() int { return int(q.tail - q.head) }

func (q *queue[T]) mask() uint { return uint(len(q.buf) - 1) }

func (q *queue[T]) push(v T) {
	if q.len() == len(q.buf) {
		q.resize(2 * len(q.buf))
	}
	q.buf[q.tail&q.mask()] = v
	q.tail++
}

// pushAll appends vs, growing the ring once if needed: at most two copies,
// one per side of the wrap.
func (q *queue[T]) pushAll(vs []T) {
	if need := q.len() + len(vs); need > len(q.buf) {
		q.resize(ceilPow2(need))
	}
	i := int(q.tail & q.mask())
	first := copy(q.buf[i:], vs)
	copy(q.buf, vs[first:])
	q.tail += uint(len(vs))
}

// pop removes and returns the oldest value; the queue must not be empty.
// The slot is zeroed so the queue does not keep garbage reachable.
func (q *queue[T]) pop() T {
	var zero T
	i := q.head & q.mask()
	v := q.buf[i]
	q.buf[i] = zero
	q.head++
	q.maybeShrink()
	return v
}

// popInto moves up to len(dst) of the oldest values into dst, oldest first,
// and returns how many: at most two copies, one per side of the wrap.
func (q *queue[T]) popInto(dst []T) int {
	n := min(len(dst), q.len())
	if n == 0 {
		return 0
	}
	i := int(q.head & q.mask())
	first := copy(dst[:n], q.buf[i:])
	clear(q.buf[i : i+first])
	if first < n {
		copy(dst[first:n], q.buf[:n-first])
		clear(q.buf[:n-first])
	}
	q.head += uint(n)
	q.maybeShrink()
	return n
}

// maybeShrink halves the ring while it is at most a quarter full, so memory
// follows the length down: after a burst drains the ring is back to min.
func (q *queue[T]) maybeShrink() {
	size := len(q.buf)
	for size > q.min && q.len() <= size/4 {
		size /= 2
	}
	if size != len(q.buf) {
		q.resize(size)
	}
}

// resize moves the values, oldest first, to the start of a new ring of
// size slots (a power of two no smaller than the length).
func (q *queue[T]) resize(size int) {
	nb := make([]T, size)
	n := q.len()
	if n > 0 {
		i := int(q.head & q.mask())
		first := copy(nb[:n], q.buf[i:])
		copy(nb[first:n], q.buf[:n-first])
	}
	q.buf, q.head, q.tail = nb, 0, uint(n)
}

// reset empties the queue and returns its ring to the minimum size.
func (q *queue[T]) reset() {
	q.buf, q.head, q.tail = make([]T, q.min), 0, 0
}
