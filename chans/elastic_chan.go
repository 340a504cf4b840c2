package chans

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// ElasticChan is an unbounded channel: a send on In never waits for long,
// whatever the receiver does, and Out delivers the values in the order they
// were sent. Make one with NewElasticChan; the zero value is not usable:
// its In, Out and Close panic.
//
// It is seed 001's design: In and Out are buffered channels (16 KiB worth
// of values each, 16 to 4096), and one goroutine, the relay, moves values
// from In to Out through a queue it alone owns (blocks linked as it grows
// and dropped as it drains, as for Elastic), with no lock: it takes every
// value In holds and hands Out as many as it has room for in one run of
// plain channel operations, which cannot block because the relay is In's
// only receiver and Out's only sender, and it parks in a select only when
// neither can move. So a value costs the producer's send, the relay's
// receive and send, and the consumer's receive: about a plain buffered
// channel's cost when the relay runs beside them.
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

// relaySpins is how many times the relay yields, finding nothing to move,
// before it parks.
const relaySpins = 2

// relay moves values In → queue → Out until the input has ended and the
// queue is empty, or until Close.
func (c *ElasticChan[T]) relay() {
	defer close(c.done)
	defer close(c.out)
	in, out, q := c.in, c.out, &c.q
	idle := 0 // runs in a row that found nothing to move
	for {
		if c.stopping.Load() {
			q.reset()
			c.queued.Store(0)
			return
		}
		moved := false
		// Runs of plain operations that cannot block: the relay is In's
		// only receiver (len(in) values are there for it) and Out's only
		// sender (cap-len slots stay free for it).
		if q.len() == 0 && in != nil {
			// Nothing queued: straight from In to Out, as far as both go.
			for k := min(len(in), cap(out)-len(out)); k > 0; k-- {
				out <- <-in
				moved = true
			}
		}
		if in != nil {
			if k := min(len(in), maxRun); k > 0 {
				for range k {
					q.push(<-in)
				}
				c.queued.Add(int64(k))
				moved = true
			}
		}
		if k := min(q.len(), cap(out)-len(out)); k > 0 {
			c.queued.Add(-int64(k)) // before they can be seen in Out
			for range k {
				out <- q.pop()
			}
			moved = true
		}
		if in == nil && q.len() == 0 {
			return
		}
		if moved {
			idle = 0
		}
		if idle < relaySpins {
			// Parking and being woken costs more than a yield, and a
			// producer or consumer mid-burst will likely have given the
			// next run something to move by then.
			idle++
			runtime.Gosched()
			continue
		}
		idle = 0
		// Park until a value arrives or Out has room for the oldest one.
		var send chan<- T
		var head T
		if q.len() > 0 {
			send, head = out, q.peek()
			c.queued.Add(-1) // it can reach Out while parked
		}
		select {
		case v, ok := <-in:
			if send != nil {
				c.queued.Add(1)
			}
			if !ok {
				in = nil
				continue
			}
			if send == nil && len(out) < cap(out) {
				out <- v
				continue
			}
			q.push(v)
			c.queued.Add(1)
		case send <- head:
			q.pop()
		case <-c.closing:
			q.reset()
			c.queued.Store(0)
			return
		}
	}
}
