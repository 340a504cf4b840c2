package seeds

// The elastic (unbounded) channel of seed 001 (npat-efault, "elastic
// channels"), re-implemented generically as the baseline for chans.Elastic:
// two buffered channels joined by a goroutine that keeps the overflow in a
// power-of-two ring with free-running indexes, using the seed's optimised
// loop (elasticRun1): after one select fires, keep receiving (up to
// ElasticMaxReceive values) or keep sending until the channel would block.

// ElasticShrinkMode says when the seed's ring gives memory back. The seed
// passes a mode to NewElasticT1 without spelling the modes out; these are the
// ones its text discusses.
type ElasticShrinkMode int

const (
	// ElasticShrinkNever keeps the ring at its largest size.
	ElasticShrinkNever ElasticShrinkMode = iota
	// ElasticShrinkEmpty returns to the minimum size whenever the ring
	// empties.
	ElasticShrinkEmpty
	// ElasticShrinkQuarter halves the ring whenever it is a quarter full.
	ElasticShrinkQuarter
)

const (
	// ElasticSendBuffer and ElasticReceiveBuffer are the seed's buffers of
	// the input (S) and output (R) channels.
	ElasticSendBuffer    = 128
	ElasticReceiveBuffer = 128
	// ElasticBigBuffer is the size of both ends of NewElasticChan4096: the
	// seed's loop with ends 32 times the seed's (issue 22).
	ElasticBigBuffer = 4096
	// ElasticMaxReceive bounds how many values one turn of the loop takes
	// from the input before it looks at the output again.
	ElasticMaxReceive = 1024
	// elasticMinRing is the ring's smallest (and first) size. The seed does
	// not give one.
	elasticMinRing = 16
)

// ElasticChan is the seed's elastic channel: send on S, receive from R.
// Closing S delivers what is buffered and then closes R; that is the only
// way its goroutine exits.
type ElasticChan[T any] struct {
	S chan<- T
	R <-chan T
}

// NewElasticChan makes an elastic channel and starts its goroutine. Seed
// 001's NewElasticT1.
func NewElasticChan[T any](mode ElasticShrinkMode) ElasticChan[T] {
	return NewElasticChanBuffered[T](mode, ElasticSendBuffer)
}

// NewElasticChan4096 is the seed's elastic channel with both ends buffered
// ElasticBigBuffer (4096) values instead of the seed's 128, its loop
// unchanged: each of the three goroutines then runs long stretches without
// parking, which makes it much faster than the seed as written.
func NewElasticChan4096[T any](mode ElasticShrinkMode) ElasticChan[T] {
	return NewElasticChanBuffered[T](mode, ElasticBigBuffer)
}

// NewElasticChanBuffered is NewElasticChan with both ends buffered buffer
// values instead of the seed's 128: the seed's loop unchanged.
func NewElasticChanBuffered[T any](mode ElasticShrinkMode, buffer int) ElasticChan[T] {
	in := make(chan T, buffer)
	out := make(chan T, buffer)
	go elasticRun1(mode, out, in)
	return ElasticChan[T]{S: in, R: out}
}

// elasticRun1 is the seed's optimised loop, generic over T.
func elasticRun1[T any](mode ElasticShrinkMode, cout chan<- T, cin <-chan T) {
	var (
		in  = cin
		out chan<- T // nil while there is nothing to send
		vi  T
		vo  T
		ok  bool
	)
	q := newElasticRing[T](mode)
	for {
		select {
		case vi, ok = <-in:
			// The seed's loop is `for i := 0; i < maxReceive; i++`, with the
			// next receive at the bottom: on its last round it receives a
			// value and then leaves the loop without queueing it, so a
			// writer that keeps the input busy for 1024 receives loses a
			// value. This copy stops receiving after ElasticMaxReceive
			// values instead, so that the baseline is correct; the cost is
			// the same.
		inLoop:
			for i := 1; ; i++ {
				if !ok {
					if out == nil {
						close(cout)
						return
					}
					in = nil
					break
				}
				if out == nil {
					vo, out = vi, cout
				} else {
					q.pushBack(vi)
				}
				if i == ElasticMaxReceive {
					break
				}
				select {
				case vi, ok = <-in:
				default:
					break inLoop
				}
			}
		case out <- vo:
		outLoop:
			for {
				vo, ok = q.popFront()
				if !ok {
					if in == nil {
						close(cout)
						return
					}
					out = nil
					// The seed goes on to try one more send here; on a nil
					// channel that always takes the default.
					break
				}
				select {
				case out <- vo:
				default:
					break outLoop
				}
			}
		}
	}
}

// elasticRing is the seed's queue: a power-of-two slice with free-running
// indexes s (front) and e (back); e-s is the length, x&m the slot of index x.
type elasticRing[T any] struct {
	buf  []T
	s, e uint32
	m    uint32
	mode ElasticShrinkMode
}

func newElasticRing[T any](mode ElasticShrinkMode) *elasticRing[T] {
	return &elasticRing[T]{buf: make([]T, elasticMinRing), m: elasticMinRing - 1, mode: mode}
}

func (q *elasticRing[T]) pushBack(v T) {
	if q.e-q.s == uint32(len(q.buf)) {
		q.resize(2 * len(q.buf))
	}
	q.buf[q.e&q.m] = v
	q.e++
}

func (q *elasticRing[T]) popFront() (T, bool) {
	var zero T
	if q.s == q.e {
		return zero, false
	}
	v := q.buf[q.s&q.m]
	q.buf[q.s&q.m] = zero
	q.s++
	n := int(q.e - q.s)
	switch {
	case len(q.buf) == elasticMinRing:
	case q.mode == ElasticShrinkEmpty && n == 0:
		q.resize(elasticMinRing)
	case q.mode == ElasticShrinkQuarter && n <= len(q.buf)/4:
		q.resize(len(q.buf) / 2)
	}
	return v, true
}

// resize copies the queue, front first, into a new slice of size (a power
// of two no smaller than the length).
func (q *elasticRing[T]) resize(size int) {
	nb := make([]T, 0, size)
	si, ei := q.s&q.m, q.e&q.m
	if q.s != q.e && si < ei {
		nb = append(nb, q.buf[si:ei]...)
	} else if q.s != q.e {
		nb = append(nb, q.buf[si:]...)
		nb = append(nb, q.buf[:ei]...)
	}
	q.buf = nb[:size]
	q.s, q.e = 0, q.e-q.s
	q.m = uint32(size - 1)
}
