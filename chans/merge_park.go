package chans

import (
	"sync"
	"sync/atomic"
)

// park waits, without spinning, until the poller's inputs see traffic again
// (or all close, or done). It starts one parker per groupSize inputs, waits
// for one of them to call it back, then stops them all and waits for them to
// return, so that ownership of every input is back with the poller. It
// returns the inputs still open and false if done came first.
func (m *merged[T]) park(ins []<-chan T) ([]<-chan T, bool) {
	pk := &parking[T]{
		merged: m,
		stop:   make(chan struct{}),
		wake:   make(chan struct{}, 1),
		closed: make([]bool, len(ins)),
	}
	pk.open.Store(int32(len(ins)))
	for lo := 0; lo < len(ins); lo += groupSize {
		var grp [groupSize]<-chan T
		copy(grp[:], ins[lo:])
		pk.wg.Add(1)
		go pk.wait(grp, lo)
	}
	ok := true
	select {
	case <-pk.wake:
	case <-m.done:
		ok = false
	}
	close(pk.stop)
	pk.wg.Wait()
	// wg.Wait orders every parker's writes to closed before these reads.
	open := ins[:0]
	for i, c := range ins {
		if !pk.closed[i] {
			open = append(open, c)
		}
	}
	clear(ins[len(open):])
	return open, ok
}

// parkSelf waits for one of at most groupSize inputs in a select of its
// own and forwards what arrives; it returns the inputs still open and false
// if done came first.
func (m *merged[T]) parkSelf(ins []<-chan T) ([]<-chan T, bool) {
	var grp [groupSize]<-chan T
	copy(grp[:], ins)
	i, v, ok, stopped := parkSelect(&grp, m.done)
	switch {
	case stopped:
		return ins, false
	case !ok:
		ins[i] = ins[len(ins)-1]
		ins[len(ins)-1] = nil
		return ins[:len(ins)-1], true
	}
	return ins, m.send(v)
}

// parking is the state one park shares with its parkers.
type parking[T any] struct {
	*merged[T]
	stop   chan struct{} // closed by the poller to take its inputs back
	wake   chan struct{} // buffered 1: a parker calls the poller back
	closed []bool        // closed[i]: input i of the poller has closed; parker-owned slots
	open   atomic.Int32  // inputs not yet closed; the parker that closes the last calls back
	wg     sync.WaitGroup
}

func (pk *parking[T]) callBack() {
	select {
	case pk.wake <- struct{}{}:
	default: // someone already did
	}
}

// wait is one parker: it forwards values from grp (inputs lo… of the
// poller; nil entries never fire) one at a time until the poller stops it.
// As soon as a value is waiting right after one was forwarded (traffic,
// which the poller handles better) it calls the poller back and returns.
func (pk *parking[T]) wait(grp [groupSize]<-chan T, lo int) {
	defer pk.wg.Done()
	live := 0
	for _, c := range grp {
		if c != nil {
			live++
		}
	}
	for live > 0 {
		i, v, ok, stopped := parkSelect(&grp, pk.stop)
		if stopped {
			return
		}
		if !ok {
			grp[i] = nil
			pk.closed[lo+i] = true
			live--
			if pk.open.Add(-1) == 0 {
				pk.callBack()
			}
			continue
		}
		if !pk.send(v) {
			return // done: the poller is returning too
		}
		for _, c := range grp {
			if c != nil && len(c) > 0 {
				pk.callBack()
				return
			}
		}
	}
}

// parkSelect blocks until one of the inputs in grp (nil entries never
// fire) yields a value or closes, or stop is closed.
func parkSelect[T any](grp *[groupSize]<-chan T, stop <-chan struct{}) (i int, v T, ok, stopped bool) {
	select {
	case v, ok = <-grp[0]:
		return 0, v, ok, false
	case v, ok = <-grp[1]:
		return 1, v, ok, false
	case v, ok = <-grp[2]:
		return 2, v, ok, false
	case v, ok = <-grp[3]:
		return 3, v, ok, false
	case v, ok = <-grp[4]:
		return 4, v, ok, false
	case v, ok = <-grp[5]:
		return 5, v, ok, false
	case v, ok = <-grp[6]:
		return 6, v, ok, false
	case v, ok = <-grp[7]:
		return 7, v, ok, false
	case <-stop:
		return 0, v, false, true
	}
}
