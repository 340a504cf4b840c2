package chans

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrClosed is returned by receiving methods once no value will ever come:
// the input was closed and everything queued has been taken, or Close was
// called.
var ErrClosed = errors.New("chans: closed")

// Policy says what a bounded queue does with a new value when it is full.
type Policy int

const (
	// Block makes the sender wait for room.
	Block Policy = iota
	// DropNewest discards the new value.
	DropNewest
	// DropOldest discards the oldest queued value to make room.
	DropOldest
)

// String returns the policy's name.
func (p Policy) String() string {
	switch p {
	case Block:
		return "Block"
	case DropNewest:
		return "DropNewest"
	case DropOldest:
		return "DropOldest"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// An ElasticOption configures NewElastic.
type ElasticOption interface {
	apply(*elasticConfig)
}

type elasticConfig struct {
	capacity int
	limit    int // 0: unbounded
	policy   Policy
}

type elasticOption func(*elasticConfig)

func (f elasticOption) apply(c *elasticConfig) { f(c) }

// WithCapacity sets the queue's initial capacity: the size of the blocks it
// is made of (default 4 KiB worth of values, between 16 and 512; at least
// 16). The queue links another block whenever its last one is full and
// drops a block once it has been read, so its memory follows its length: at
// most the length plus two blocks, and two blocks once drained. It panics
// if n < 1.
func WithCapacity(n int) ElasticOption {
	if n < 1 {
		panic(fmt.Sprintf("chans: capacity must be ≥ 1, got %d", n))
	}
	return elasticOption(func(c *elasticConfig) { c.capacity = n })
}

// WithLimit bounds the queue at n values (one more in a race between Push
// and In under Block: see Elastic.In) and says what a send does when it is
// full. Dropped values are counted (see Elastic.Dropped). It panics if
// n < 1 or p is not a Policy.
func WithLimit(n int, p Policy) ElasticOption {
	if n < 1 {
		panic(fmt.Sprintf("chans: limit must be ≥ 1, got %d", n))
	}
	if p < Block || p > DropOldest {
		panic(fmt.Sprintf("chans: unknown policy %d", int(p)))
	}
	return elasticOption(func(c *elasticConfig) { c.limit, c.policy = n, p })
}

// panicZero reports a zero value of type what used where it would hang or
// drop silently. Callers check only off their fast paths: where a queue
// looks full or empty, or where a goroutine is about to wait.
func panicZero(what, constructor string) {
	panic(fmt.Sprintf("chans: zero %s used: make one with %s", what, constructor))
}

// maxAllocBytes bounds one allocation: the most a Go heap object can be on
// 64-bit platforms (runtime.maxAlloc, 2⁴⁸ bytes).
const maxAllocBytes = 1 << 48

// checkFits panics, naming what and n, unless n values of T fit in one
// allocation: a capacity that could never be allocated is a programmer
// error, not a runtime one.
func checkFits[T any](what string, n int) {
	var zero T
	if size := uint64(unsafe.Sizeof(zero)); size > 0 && uint64(n) > maxAllocBytes/size {
		panic(fmt.Sprintf("chans: %s capacity %d is too large: %d bytes per value exceed what one allocation can hold", what, n, size))
	}
}
