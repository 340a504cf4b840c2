package chans

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
)

// How Merge works. A goroutine per input (seed 000's canonical merge) pays a
// goroutine wakeup for almost every value; a select over all inputs at once
// needs reflect.Select, which allocates per input on every call. Merge
// instead starts a few pollers, each owning a contiguous share of the inputs.
// While values flow, a poller sweeps its inputs with non-blocking receives,
// draining what each holds before moving on, and forwards to a buffered
// output: no goroutine is woken per value, and senders blocked on a full
// input are released a buffer-full at a time. When idleSweeps sweeps in a
// row find nothing (with runtime.Gosched between them, so the senders get
// the CPU), the poller parks: it hands its inputs to parkers, goroutines of
// groupSize inputs each blocked in an ordinary select, and waits. A parker
// forwards what trickles in, one wakeup per value, and gives the inputs back
// when it sees traffic (more than one value waiting) or when all the
// poller's inputs have closed; the poller then stops the parkers, waits for
// them to return, and sweeps again.
//
// Invariant: each input is owned by exactly one goroutine at a time (its
// poller, or one parker while the poller waits for all its parkers), and
// the owner forwards a value before receiving the next one from that input,
// so values from one input leave in the order they were sent.

const (
	// groupSize is the number of inputs one parker waits on; parkSelect
	// has one case per input plus one for its stop channel.
	groupSize = 8
	// idleSweeps is how many empty sweeps a poller makes before parking.
	idleSweeps = 8
	// inputsPerPoller is the fewest inputs worth a poller of their own.
	inputsPerPoller = 32
	// maxPollers bounds the pollers: they all send on one output channel,
	// so more of them add contention rather than speed.
	maxPollers = 4
	// maxOutBuffer bounds the output buffer, which is otherwise one slot
	// per input.
	maxOutBuffer = 1024
)

// Merge returns a channel that receives every value sent on the inputs,
// each exactly once, and is closed once every input has been closed and its
// values delivered. Zero inputs give a closed channel. A nil input is a
// programmer error (it could never close, so neither could the output) and
// panics.
//
// Values from one input arrive in the order they were sent; values from
// different inputs interleave in no promised order. A channel passed more
// than once is one input. No input can starve
// another: a poller takes at most one buffer-full (plus one) from an input
// before moving to the next.
//
// Merge starts between one and four goroutines (about one per 32 inputs, at
// most GOMAXPROCS) and, while they are idle, one more per eight inputs;
// they all return when the output is closed. The output is buffered, one
// slot per input (at least 16, at most 1024), so a slow reader holds up the
// inputs only once that buffer is full. Cost per value: one receive and one buffered send,
// and, when values arrive slower than they are read, a goroutine wakeup.
// Nothing is allocated per value.
//
// If the reader stops reading before the output closes, the merging
// goroutines stay blocked: use MergeContext to be able to stop them.
func Merge[T any](ins ...<-chan T) <-chan T {
	return merge(nil, ins)
}

// MergeContext is Merge with cancellation: once ctx is done, the merging
// goroutines stop receiving and the output is closed, whether or not the
// inputs have been. Values still in the inputs stay there; a value already
// received but not yet delivered when ctx is done is discarded (at most one
// per merging goroutine). The caller must still drain or abandon the
// output; it closes without needing a reader.
func MergeContext[T any](ctx context.Context, ins ...<-chan T) <-chan T {
	if ctx == nil {
		panic("chans: nil context passed to MergeContext")
	}
	return merge(ctx.Done(), ins)
}

// merge is Merge with an optional done channel (nil: never done).
func merge[T any](done <-chan struct{}, ins []<-chan T) <-chan T {
	for i, in := range ins {
		if in == nil {
			panic(fmt.Sprintf("chans: nil input channel at index %d", i))
		}
	}
	if len(ins) > groupSize {
		// Up to groupSize inputs, one goroutine owns them all; beyond, a
		// channel passed twice could be owned by two at once.
		ins = distinct(ins)
	}
	out := make(chan T, min(max(len(ins), 16), maxOutBuffer))
	if len(ins) == 0 {
		close(out)
		return out
	}
	np := min(max(len(ins)/inputsPerPoller, 1), maxPollers, runtime.GOMAXPROCS(0))
	share := (len(ins) + np - 1) / np
	np = (len(ins) + share - 1) / share // the shares actually made
	m := &merged[T]{out: out, done: done}
	m.running.Store(int32(np))
	for lo := 0; lo < len(ins); lo += share {
		own := append([]<-chan T(nil), ins[lo:min(lo+share, len(ins))]...)
		go m.poll(own)
	}
	return out
}

// distinct returns ins without repeats, in the order of their first
// appearance: ins itself when it has none.
func distinct[T any](ins []<-chan T) []<-chan T {
	seen := make(map[<-chan T]struct{}, len(ins))
	for i, in := range ins {
		if _, dup := seen[in]; dup {
			uniq := append([]<-chan T(nil), ins[:i]...)
			for _, in := range ins[i+1:] {
				if _, dup := seen[in]; !dup {
					seen[in] = struct{}{}
					uniq = append(uniq, in)
				}
			}
			return uniq
		}
		seen[in] = struct{}{}
	}
	return ins
}

// merged is the state the pollers of one merge share.
type merged[T any] struct {
	out     chan T
	done    <-chan struct{}
	running atomic.Int32 // pollers not yet returned; the last closes out
}

// send delivers v, blocking while the output is full; false means done
// came first and v was discarded.
func (m *merged[T]) send(v T) bool {
	select {
	case m.out <- v:
		return true
	default:
	}
	select {
	case m.out <- v:
		return true
	case <-m.done:
		return false
	}
}

// poll owns ins (a private slice) until each has closed or done.
func (m *merged[T]) poll(ins []<-chan T) {
	defer func() {
		if m.running.Add(-1) == 0 {
			close(m.out)
		}
	}()
	idle := 0
	for len(ins) > 0 {
		select {
		case <-m.done:
			return
		default:
		}
		var moved, ok bool
		ins, moved, ok = m.sweep(ins)
		switch {
		case !ok:
			return
		case moved:
			idle = 0
		case idle < idleSweeps:
			idle++
			runtime.Gosched()
		case len(ins) <= groupSize:
			// Few enough to wait on in one select: no parkers needed.
			idle = 0
			if ins, ok = m.parkSelf(ins); !ok {
				return
			}
		default:
			idle = 0
			if ins, ok = m.park(ins); !ok {
				return
			}
		}
	}
}

// sweep visits every input once, draining it; it returns the inputs still
// open, whether anything was received (a close counts), and false if done
// came first.
func (m *merged[T]) sweep(ins []<-chan T) ([]<-chan T, bool, bool) {
	moved := false
	for i := 0; i < len(ins); i++ {
		got, open, ok := m.drain(ins[i])
		moved = moved || got
		if !ok {
			return ins, moved, false
		}
		if !open {
			last := len(ins) - 1
			ins[i], ins[last] = ins[last], nil
			ins = ins[:last]
			i--
		}
	}
	return ins, moved, true
}

// drain forwards what c holds: at most len(c)+1 values, the buffer plus one
// from a blocked sender (the only way to receive from an unbuffered input),
// so that a fast sender cannot keep the poller on one input. It reports
// whether it received anything (a close counts), whether c is still open,
// and false if done came first.
func (m *merged[T]) drain(c <-chan T) (moved, open, ok bool) {
	for k := len(c) + 1; k > 0; k-- {
		select {
		case v, isOpen := <-c:
			if !isOpen {
				return true, false, true
			}
			if !m.send(v) {
				return true, true, false
			}
			moved = true
		default:
			return moved, true, true
		}
	}
	return moved, true, true
}
