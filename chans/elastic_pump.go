package chans

// Elastic's goroutine (the pump) joins In, the queue and Out, as in seed
// 001: it parks in a select over "receive from In", "send the held value on
// Out" and its wake channel, and on every wakeup takes the mutex once and
// moves as much as it can without blocking (up to maxMove values) before
// parking again. So under load a value costs a non-blocking receive, a queue
// push and pop and a non-blocking send, with one select and one lock per
// run of values rather than per value.

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
		v        T
		ok       bool
		received bool // the last select received v, ok from In
		sent     bool // the last select sent the held value
	)
	for {
		e.lockPump()
		if sent {
			s.have = false
		} else if s.have {
			e.held = 1
		}
		if received {
			e.receivedLocked(&s, v, ok)
		}
		if _, alive := e.moveLocked(&s); !alive {
			e.unlockPump()
			return
		}
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

		received, sent = false, false
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
func (e *Elastic[T]) moveLocked(s *pumpState[T]) (moved int, alive bool) {
	for moved < maxMove {
		before := moved
		for e.outOn && moved < maxMove && e.loadHeadLocked(s) {
			select {
			case e.out <- s.head:
				s.have, e.held = false, 0
				moved++
				continue
			default:
			}
			break
		}
	receive:
		for s.in != nil && moved < maxMove && e.acceptingLocked() {
			select {
			case v, ok := <-s.in:
				e.receivedLocked(s, v, ok)
				moved++
			default:
				break receive
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

// loadHeadLocked makes sure the pump holds the next value for Out, if Out is
// on and there is one; it reports whether the pump holds a value.
func (e *Elastic[T]) loadHeadLocked(s *pumpState[T]) bool {
	if !s.have && e.outOn && e.q.len() > 0 {
		s.head, s.have, e.held = e.q.pop(), true, 1
		e.tookLocked(1)
	}
	return s.have
}
