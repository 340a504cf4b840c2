package chans

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// ElasticChan is an unbounded channel: a send on In never waits for long,
// whatever the receiver does, and Out delivers the values in the order they
// were sent. Make one with NewElasticChan; the zero value is not usable:
// its In, Out and Close panic.
//
// It is seed 001's design: In and Out are buffered channels (32 KiB worth
// of values each, 16 to 4096), and one goroutine, the relay, moves values
// from In to Out through a queue it alone owns (blocks linked as it grows
// and dropped as it drains, as for Elastic), with no lock. It runs the
// seed's loop: a select over In and Out, each firing a run that moves what
// can move without blocking. So a value costs four channel operations (the
// producer's send, the relay's receive and send, the consumer's receive)
// and a share of a select and of a goroutine wakeup; the big ends make the
// three goroutines run long stretches between parks. Round cost: up to
// about twice a plain buffered channel's per value, and no more than seed
// 001's own loop with ends of the same size (BenchmarkElasticVersus).
//
// Closing In ends the input: the relay delivers everything still queued,
// then closes Out and returns. Close stops everything at once instead. The
// relay is the one goroutine an ElasticChan starts, in NewElasticChan; it
// returns after In is closed and every value is delivered, or on Close —
// so an ElasticChan that is neither closed nor drained keeps its goroutine.
// To tie it to a context, context.AfterFunc(ctx, c.Close).
//
// For a queue used through methods (Push, PopMany) with no goroutine, and
// for limits and drop policies, see Elastic.
type ElasticChan[T any] struct {
	in, out chan T
	// queued counts the relay's queue as Len sees it: the relay lowers it
	// before values can reach Out and raises it after they have left In,
	// so Len never counts a value twice.
	queued  atomic.Int64
	q       queue[T] // the relay's alone
	closing chan struct{}
	// stopping is set by Close before it closes closing: the relay checks
	// it once per run, as with values flowing it may never park.
	stopping atomic.Bool
	done     chan struct{}
	once     sync.Once
}

// NewElasticChan returns an empty ElasticChan and starts its relay
// goroutine. WithCapacity sets the size of its queue's blocks; it panics
// when given WithLimit (see Elastic for limits), a nil option, or blocks too
// large for one allocation.
func NewElasticChan[T any](opts ...ElasticOption) *ElasticChan[T] {
	cfg := elasticConfig{capacity: defaultCapacity[T]()}
	for i, o := range opts {
		if o == nil {
			panic(fmt.Sprintf("chans: nil ElasticOption at index %d passed to NewElasticChan", i))
		}
		o.apply(&cfg)
	}
	checkFits[T]("ElasticChan", cfg.capacity)
	if cfg.limit > 0 {
		panic(fmt.Sprintf("chans: NewElasticChan takes no limit, got WithLimit(%d, %v): use Elastic", cfg.limit, cfg.policy))
	}
	buf := chanBuffer[T](0)
	c := &ElasticChan[T]{
		in:      make(chan T, buf),
		out:     make(chan T, buf),
		q:       newQueue[T](cfg.capacity),
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	go c.relay()
	return c
}

// In returns the channel to send values on; close it to end the input. A
// send waits only while In's buffer is full, which lasts as long as the
// relay takes to empty it; after Close nothing receives from In any more,
// so a send then waits forever once the buffer is full.
func (c *ElasticChan[T]) In() chan<- T {
	if c.in == nil { // a send on it would wait forever
		panicZero("ElasticChan", "NewElasticChan")
	}
	return c.in
}

// Out returns the channel to receive values from, in the order they were
// sent. It is closed once In has been closed and every value delivered, or
// on Close (after the values its buffer already holds).
func (c *ElasticChan[T]) Out() <-chan T {
	if c.out == nil { // a receive from it would wait forever
		panicZero("ElasticChan", "NewElasticChan")
	}
	return c.out
}

// Len returns how many values are in the ElasticChan: in In's or Out's
// buffer, or queued by the relay. It is a snapshot for metrics that never
// overstates: it can miss the values the relay is moving at that instant,
// and the one it waits to hand to a full Out. After Close it counts only
// what Out still holds: In's buffer will never be received.
func (c *ElasticChan[T]) Len() int {
	// Downstream first, so that a value moving while Len reads is missed
	// at worst, never counted twice.
	n := len(c.out)
	n += int(c.queued.Load())
	if c.stopping.Load() {
		return n // queued is 0 once the relay has seen Close
	}
	return n + len(c.in)
}

// Close stops the ElasticChan at once: queued values are discarded, Out is
// closed after what its buffer holds, and nothing receives from In any
// more. It waits for the relay to return. Calling it more than once, or
// after the input has ended, is harmless.
func (c *ElasticChan[T]) Close() {
	if c.done == nil { // it would wait forever for a relay that never ran
		panicZero("ElasticChan", "NewElasticChan")
	}
	c.once.Do(func() {
		c.stopping.Store(true)
		close(c.closing)
	})
	<-c.done
}

// maxRun bounds the values the relay receives in one run, so that a
// producer faster than it cannot keep it from serving Out.
const maxRun = 4096

// relay moves values In → queue → Out until the input has ended and the
// queue is empty, or until Close. It is seed 001's loop (elasticRun1): one
// select over "receive from In" and "send the oldest value on Out" (enabled
// only while there is one), each firing a run. A receive is followed by
// non-blocking receives while In has values; a send by as many plain sends
// as Out has room for, which cannot block as the relay is Out's only
// sender. With ends this size each goroutine runs long stretches between
// parks; the relay never yields without parking, which makes the goroutines
// take turns on a CPU rather than contend for the ends' locks.
func (c *ElasticChan[T]) relay() {
	defer close(c.done)
	defer close(c.out)
	in, q, cout := c.in, &c.q, c.out
	var (
		out  chan<- T // cout while head holds the oldest value, else nil
		head T
		zero T
	)
	for {
		// Once per run: with both ends busy the select may pick a run
		// over closing many times in a row.
		if c.stopping.Load() {
			break
		}
		select {
		case v, ok := <-in:
			pushed := 0
		receive:
			for i := 1; ; i++ {
				if !ok {
					in = nil
					break
				}
				if out == nil {
					head, out = v, cout
				} else {
					q.push(v)
					pushed++
				}
				if i == maxRun {
					break
				}
				select {
				case v, ok = <-in:
				default:
					break receive
				}
			}
			// After the values left In: Len misses them meanwhile, never
			// counts them twice.
			c.queued.Add(int64(pushed))
			if in == nil && out == nil {
				return
			}
		case out <- head:
			if k := min(q.len(), cap(cout)-len(cout)); k > 0 {
				c.queued.Add(-int64(k)) // before they can be seen in Out
				for range k {
					cout <- q.pop()
				}
			}
			if q.len() == 0 {
				head, out = zero, nil // keep nothing delivered reachable
				if in == nil {
					return
				}
				continue
			}
			c.queued.Add(-1) // head can reach Out at any moment now
			head = q.pop()
		case <-c.closing:
			q.reset()
			c.queued.Store(0)
			return
		}
	}
	q.reset()
	c.queued.Store(0)
}
