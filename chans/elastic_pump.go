package chans

// Elastic's goroutine (the pump) joins In, the queue and Out, as in seed
// 001. Each round it takes the mutex once and moves as much as it can
// without blocking (up to maxMove values), in runs of plain channel
// operations sized by len and cap; then it waits in a select over "receive
// from In", "send the held value on Out" and its wake channel, which fires
// at once when one can, like ElasticChan's relay (seed 001's loop): it never
// yields without parking, so that with In's and Out's big buffers the
// goroutines take turns on a CPU in long stretches. So under load a value
// costs a receive, a queue push and pop and a send, with one lock and one
// select per run of values rather than per value.

// maxMove bounds the values moved under one hold of the mutex, so Push and
// Pop never wait long for it.
const maxMove = 512

func (e *Elastic[T]) start() {
	if e.started.Load() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started.Load() {
		return
	}
	if e.pumpWake == nil {
		panicZero("Elastic", "NewElastic")
	}
	buf := chanBuffer[T](e.cfg.limit)
	e.in = make(chan T, buf)
	e.out = make(chan T, buf)
	e.pumpDone = make(chan struct{})
	// The store publishes in, out and pumpDone to the lock-free readers in
	// In, Out and Len.
	e.started.Store(true)
	go e.pump()
}

// pumpState is what the pump keeps between wakeups; only it touches this.
type pumpState[T any] struct {
	in   <-chan T // nil once In has been closed
	head T        // taken from the queue, not yet sent on Out (when have)
	have bool
}

func (e *Elastic[T]) pump() {
	defer close(e.pumpDone)
	defer close(e.out)
	s := pumpState[T]{in: e.in}
	var (
		zero     T
		v        T
		ok       bool
		received bool // the last select received v, ok from In
		sent     bool // the last select sent the held value
	)
	for {
		e.lockPump()
		if e.closed {
			// Close emptied the queue: what the last select received, and
			// what In still holds, is discarded with it.
			e.unlockPump()
			return
		}
		if sent {
			s.head, s.have = zero, false // keep nothing delivered reachable
		} else if s.have {
			e.held = 1
		}
		if received {
			e.receivedLocked(&s, v, ok)
			v = zero
		}
		_, alive := e.moveLocked(&s)
		if !alive {
			e.unlockPump()
			return
		}
		received, sent = false, false
		// Park with only the cases that can make progress: a nil channel
		// never fires.
		var in <-chan T
		if s.in != nil && e.acceptingLocked() {
			in = s.in
		}
		var out chan<- T
		if s.have {
			out = e.out
			// Once parked, the held value can land in Out at any moment:
			// Len must not count it in both places.
			e.held = 0
		}
		e.unlockPump()

		select {
		case v, ok = <-in:
			received = true
		case out <- s.head:
			sent = true
		case <-e.pumpWake:
		case <-e.closing:
			return
		}
	}
}

// lockPump and unlockPump bracket the pump's hold of the mutex; pumping
// tells wakePump that the pump is awake and needs no token.
func (e *Elastic[T]) lockPump() {
	e.mu.Lock()
	e.pumping = true
}

func (e *Elastic[T]) unlockPump() {
	e.pumping = false
	e.mu.Unlock()
}

// acceptingLocked reports whether the pump may take more from In: not while
// a Block limit is reached (In's buffer then fills and its senders wait).
func (e *Elastic[T]) acceptingLocked() bool {
	return e.cfg.limit == 0 || e.cfg.policy != Block || e.q.len() < e.cfg.limit
}

// receivedLocked handles a receive from In: the end of the input, or a
// value, which goes straight to Out when nothing is ahead of it and Out has
// room, and into the queue otherwise.
func (e *Elastic[T]) receivedLocked(s *pumpState[T], v T, ok bool) {
	if !ok {
		s.in = nil
		e.ended = true
		close(e.inputDone) // wakes every waiting Pop and Push
		return
	}
	if e.outOn && !s.have && e.q.len() == 0 {
		select {
		case e.out <- v:
			return
		default:
		}
	}
	e.queueLocked(v)
}

// moveLocked moves values queue → Out and In → (queue →) Out until nothing
// can move without blocking or maxMove values have moved. It returns false
// when the pump should return: Close was called, or the input has ended and
// every value has left.
//
// The moves are runs of plain channel operations, sized by len and cap
// first: the pump is In's only receiver and Out's only sender, so none of
// them can block, and none needs a select.
func (e *Elastic[T]) moveLocked(s *pumpState[T]) (moved int, alive bool) {
	for moved < maxMove {
		before := moved
		if e.outOn {
			moved += e.feedOutLocked(s, maxMove-moved)
		}
		if s.in != nil && moved < maxMove && e.acceptingLocked() {
			if e.cfg.limit > 0 {
				moved += e.receiveEachLocked(s, maxMove-moved)
			} else {
				moved += e.receiveRunLocked(s, maxMove-moved)
			}
		}
		if moved == before {
			break
		}
	}
	if e.closed {
		return moved, false
	}
	// With the budget spent, a value may be left queued: hold it, so the
	// pump parks on sending it rather than on nothing.
	e.loadHeadLocked(s)
	return moved, !(s.in == nil && !s.have && e.q.len() == 0)
}

// feedOutLocked sends the held value, then queued values, on Out, as many
// as Out has room for and at most budget; it returns how many it sent.
func (e *Elastic[T]) feedOutLocked(s *pumpState[T], budget int) int {
	sent := 0
	if s.have {
		if len(e.out) == cap(e.out) {
			return 0
		}
		e.out <- s.head
		var zero T
		s.head, s.have, e.held = zero, false, 0
		sent++
	}
	k := min(e.q.len(), cap(e.out)-len(e.out), budget-sent)
	if k <= 0 {
		return sent
	}
	for range k {
		e.out <- e.q.pop()
	}
	e.tookLocked(k)
	return sent + k
}

// receiveRunLocked takes what In holds, up to budget, with no limit to
// apply: straight on to Out while nothing is ahead of it (no value held,
// the queue empty) and Out has room, into the queue after that. It returns
// how many it took.
func (e *Elastic[T]) receiveRunLocked(s *pumpState[T], budget int) int {
	k := min(len(s.in), budget)
	if k == 0 {
		return 0
	}
	n := k
	if e.outOn && !s.have && e.q.len() == 0 {
		direct := min(k, cap(e.out)-len(e.out))
		for range direct {
			e.out <- <-s.in
		}
		k -= direct
	}
	if k > 0 {
		wasEmpty := e.q.len() == 0
		for range k {
			e.q.push(<-s.in)
		}
		if wasEmpty {
			e.valueReadyLocked()
		}
	}
	return n
}

// receiveEachLocked takes what In holds one value at a time, up to budget,
// through receivedLocked (which applies the limit and ends the input when
// In is closed); it returns how many values (and ends) it took.
func (e *Elastic[T]) receiveEachLocked(s *pumpState[T], budget int) int {
	took := 0
	for s.in != nil && took < budget && e.acceptingLocked() {
		select {
		case v, ok := <-s.in:
			e.receivedLocked(s, v, ok)
			took++
		default:
			return took
		}
	}
	return took
}

// loadHeadLocked makes sure the pump holds the next value for Out, if Out is
// on and there is one; it reports whether the pump holds a value.
func (e *Elastic[T]) loadHeadLocked(s *pumpState[T]) bool {
	if !s.have && e.outOn && e.q.len() > 0 {
		s.head, s.have, e.held = e.q.pop(), true, 1
		e.tookLocked(1)
	}
	return s.have
}
