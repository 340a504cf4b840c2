package sluice

// The machinery under Keyed and Window: a router goroutine that hashes
// each item's key to one of n workers, the batches it sends them, and
// the worker loop.

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// kmsg is one message from a keyed stage's router to a worker.
type kmsg[T any] struct {
	v   T
	h   uint64 // the hash of the item's key, which picked its worker
	ts  int64  // Window: the item's event time (ns since the Unix epoch)
	wm  int64  // Window: the watermark as the router took the item, or a marker's
	lw  int64  // Window: the watermark of the item's partition, which judges its lateness
	ctl bool   // to every worker: a control item, or (Window) a watermark marker
}

// kbatch is a batch of messages for one worker, and their traces when
// the pipeline traces (see traceSlot; nil otherwise).
type kbatch[T any] struct {
	items  []kmsg[T]
	traces []context.Context
}

// kbatchSize is the most messages the router puts in one batch.
const kbatchSize = 256

// kqueue is how many batches a worker's queue holds.
const kqueue = 8

// keyWorker is one worker of a keyed stage: what it does with each
// message, on a timer, and at the end of the input.
type keyWorker[T any] interface {
	handle(m *kmsg[T]) error
	// alarm returns a channel that ends a wait for input (nil: none);
	// tick runs when it fires, and after each batch, with the time.
	alarm() <-chan time.Time
	tick(now time.Time) error
	// end runs once the input is drained; drained says it ended by a
	// Drain rather than by a finite input running out.
	end(drained bool) error
	flush() bool
	flushHeld(start, now int64) bool
	keys() int64
}

// router is how a keyed stage picks a worker for each item.
type router[T any] interface {
	// routeChunk routes each item of c, its trace (when traced) set on
	// the router's worker; false when the pipeline stops. It loops over
	// the items itself: no call through the interface per item.
	routeChunk(kc routeTo[T], c *chunk[T]) bool
	chunkDone(kc routeTo[T]) bool // after each input chunk
	alarm() <-chan time.Time
	ring(kc routeTo[T]) bool
	flush() bool // hands on what the router sends itself (late items)
}

// routeTo is what a router sends through: the batches of the workers.
// A struct rather than an interface, so that a router's calls of to are
// direct (and inlined) on the per-item path.
type routeTo[T any] struct{ *kroute[T] }

// kroute is the router's side of a keyed stage: the batch being filled
// for each worker and the workers' queues.
type kroute[T any] struct {
	p    *Pipeline
	s    *stage
	n    int
	qs   []chan *kbatch[T]
	bufs []*kbatch[T] // the router's batch being filled, per worker
	pool sync.Pool
	rc   receipts[T] // the receipts of an item; nil when T carries none
	// rw is the router's worker, whose trace (the item at hand's) each
	// message's batch carries when traced: the pipeline traces.
	rw     *worker
	traced bool
	// inline: worker 0 runs on the router's goroutine; run handles a
	// batch there, and err is what stopped it (see newKeyedCore).
	inline bool
	run    func(b *kbatch[T]) error
	err    error
}

// keyedCore is the machinery of Keyed and Window: a stage with n + 1
// goroutines — slot 0 the router, slots 1..n the workers — and a queue
// of batches per worker; or, inline, one goroutine that routes and runs
// its one worker's batches itself.
type keyedCore[T, U any] struct {
	kroute[T]
	ie  *edge[T]
	oe  *edge[U]
	kws []keyWorker[T]
}

// newKeyedCore registers a keyed stage of n workers. With inline (n must
// be 1) the router handles each batch on its own goroutine when the batch
// is full or its input chunk is done, instead of queueing it for a worker
// goroutine: the stage runs one goroutine, and a batch crosses no core.
// Only a worker with no alarm (no timer of its own) may run inline.
func newKeyedCore[T, U any](p *Pipeline, kind stageKind, name string, in Stream[T], n int, inline bool, cfg stageConfig) *keyedCore[T, U] {
	g := n + 1
	if inline {
		g = 1
	}
	s := newStage(p, kind, name, g)
	kc := &keyedCore[T, U]{kroute: kroute[T]{p: p, s: s, n: n, rc: receiptsOf[T](), rw: s.workers[0], traced: p.tracer != nil, inline: inline}}
	kc.ie = consume(p, s, in, 1)
	kc.ie.unmeasured()
	kc.oe = newEdge[U](p, s, g, cfg)
	kc.bufs = make([]*kbatch[T], n)
	if !inline {
		kc.qs = make([]chan *kbatch[T], n)
		for i := range kc.qs {
			kc.qs[i] = make(chan *kbatch[T], kqueue)
		}
	}
	kc.kws = make([]keyWorker[T], n)
	kc.report(func(st *StageStats) {
		for _, kw := range kc.kws {
			if kw != nil {
				st.Keys += kw.keys()
			}
		}
	})
	return kc
}

// report adds f to what the stage's snapshots report; Stats may run
// while the pipeline is built.
func (kc *keyedCore[T, U]) report(f func(st *StageStats)) {
	kc.p.mu.Lock()
	defer kc.p.mu.Unlock()
	kc.s.extra = append(kc.s.extra, f)
}

// start starts the router and the workers (mk builds worker i's state).
func (kc *keyedCore[T, U]) start(r router[T], mk func(i int, w *worker, out *sender[U]) keyWorker[T]) {
	p, s := kc.p, kc.s
	rw := s.workers[0]
	kws := make([]keyWorker[T], kc.n)
	if kc.inline {
		kws[0] = mk(0, rw, newSender(kc.oe, 0, rw))
		kc.run = func(b *kbatch[T]) error {
			tr := rw.trace // the router's item at hand's
			err := kc.batchOn(rw, kws[0], b)
			rw.trace = tr
			return err
		}
	} else {
		for i := range kc.n {
			w := s.workers[i+1]
			kws[i] = mk(i, w, newSender(kc.oe, i+1, w))
		}
	}
	p.mu.Lock()
	copy(kc.kws, kws)
	p.mu.Unlock()
	rt := routeTo[T]{&kc.kroute}
	stopped := func() error {
		if kc.err != nil {
			return kc.err
		}
		return errStopped
	}
	loop(p, s, rw, newReceiver(kc.ie, 0, rw), body[T]{
		each: func(c *chunk[T]) error {
			var start int64
			if kc.inline {
				start = nowNs()
			}
			if !r.routeChunk(rt, c) || !r.chunkDone(rt) || !kc.sendAll() {
				return stopped()
			}
			if kc.inline && !kws[0].flushHeld(start, nowNs()) {
				return errStopped
			}
			return nil
		},
		idle: func() bool {
			return kc.sendAll() && r.flush() && (!kc.inline || kws[0].flush())
		},
		alarm: r.alarm,
		ring:  func() bool { return r.ring(rt) && kc.sendAll() },
		end: func() bool {
			ok := kc.sendAll() && r.flush()
			if kc.inline {
				rw.trace = nil
				return ok && !p.stopping() && kws[0].end(p.intakeClosed()) == nil && kws[0].flush()
			}
			for _, q := range kc.qs {
				close(q)
			}
			return ok
		},
	})
	if !kc.inline {
		for i := range kc.n {
			kc.work(i, s.workers[i+1], kc.kws[i])
		}
	}
}

// batchOn handles batch b on worker w's goroutine: the tick, each
// message, then what its outputs held too long is handed on.
func (kc *keyedCore[T, U]) batchOn(w *worker, kw keyWorker[T], b *kbatch[T]) error {
	start := nowNs()
	w.trace = nil
	if err := kw.tick(time.Now()); err != nil {
		return err
	}
	for j := range b.items {
		if kc.p.halted() {
			return errStopped
		}
		if b.traces != nil {
			w.trace = b.traces[j]
		}
		if err := kw.handle(&b.items[j]); err != nil {
			return err
		}
	}
	kc.recycle(b)
	if !kw.flushHeld(start, nowNs()) {
		return errStopped
	}
	return nil
}

// work runs worker i: batches from its queue, a timer, the end.
func (kc *keyedCore[T, U]) work(i int, w *worker, kw keyWorker[T]) {
	p := kc.p
	q := kc.qs[i]
	p.goStage(kc.s, w, func() error {
		for {
			var b *kbatch[T]
			var ok bool
			select {
			case b, ok = <-q:
			default:
				if !kw.flush() {
					return errStopped
				}
				w.waitInput()
				// Yield a few times before parking, as the engine's
				// receivers do (spinRounds): the router is usually about
				// to hand on the next batch.
				for range spinRounds {
					runtime.Gosched()
					if len(q) > 0 {
						break
					}
				}
				select {
				case b, ok = <-q:
				case now := <-kw.alarm():
					w.resume()
					w.trace = nil // what a timer emits continues no item's trace
					if err := kw.tick(now); err != nil {
						return err
					}
					continue
				case <-p.ctx.Done():
					w.resume()
					return errStopped
				}
				w.resume()
			}
			if !ok {
				if p.stopping() {
					return errStopped
				}
				w.trace = nil
				if err := kw.end(p.intakeClosed()); err != nil {
					return err
				}
				if !kw.flush() {
					return errStopped
				}
				return nil
			}
			if err := kc.batchOn(w, kw, b); err != nil {
				return err
			}
		}
	})
}
