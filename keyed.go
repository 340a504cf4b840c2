package sluice

import (
	"context"
	"fmt"
	"iter"
	"sync/atomic"
	"time"
)

// KeyEnd says why a [Keyed] stage's End function is called for a key.
type KeyEnd int

const (
	// KeyEvicted: the key received no item for the stage's TTL; its state
	// is dropped after End returns.
	KeyEvicted KeyEnd = iota
	// KeyFlushed: the stage's input ended (drained or not); every key
	// held is flushed, one after another, and the stage then closes its
	// output.
	KeyFlushed
)

func (e KeyEnd) String() string {
	switch e {
	case KeyEvicted:
		return "evicted"
	case KeyFlushed:
		return "flushed"
	}
	return fmt.Sprintf("KeyEnd(%d)", int(e))
}

// KeyFuncs are the functions of a [Keyed] stage: items of type T, keys
// of type K, a state S per key, results of type U. Key and Item are
// required; the others are optional.
//
// Every function is called on the one worker that owns the key (or, for
// Control, on each worker in turn), never concurrently for one key, so
// the state takes no lock. emit hands a result on and returns false once
// the pipeline has stopped (the function should then return); it must
// not be called after the function returns. An error fails the pipeline.
type KeyFuncs[T any, K comparable, S any, U any] struct {
	// Key returns the key of an item. It is called by the stage's router,
	// one goroutine, for every item: keep it cheap.
	Key func(v T) K
	// Item is called with each item, its key and the key's state: a zero
	// S the first time the key is seen (or seen again after its eviction).
	Item func(ctx context.Context, key K, state *S, v T, emit func(U) bool) error
	// End, if set, is called before a key's state is dropped: when the key
	// was idle for TTL (why is [KeyEvicted]) and, for every key still
	// held, when the input ends ([KeyFlushed]).
	End func(ctx context.Context, key K, state *S, why KeyEnd, emit func(U) bool) error
	// IsControl, if set, marks control items: a control item is not keyed
	// but sent to every worker, where Control is called with it and an
	// iterator over that worker's keys and states (a marker, a
	// watermark, a command that touches every key). Control must be set
	// when IsControl is.
	IsControl func(v T) bool
	Control   func(ctx context.Context, v T, keys iter.Seq2[K, *S], emit func(U) bool) error
	// TTL, if > 0, evicts a key that received no item for that long. Keys
	// are checked every TTL/4 (and when a worker is idle), so a key is
	// evicted between TTL and 1.25 × TTL after its last item. 0 keeps
	// every key until the end of the input.
	TTL time.Duration
}

// Keyed starts a stage that keeps state per key: a router (one goroutine)
// sends each item to the one of n workers that owns its key — by a hash
// of the key seeded per stage — and that worker calls Item with the key's
// state. A key is owned by one worker for the whole run, so its items are
// handled one at a time, in the order the stage received them, and its
// state needs no lock; different keys run in parallel. Output order
// across keys is not kept.
//
// Receipts settle as [FlatMap]'s do: each result that carries a
// [Receipt] holds it, and the input's own hold is acknowledged when Item
// returns (a control item holds once per worker). State kept across calls
// is therefore not crash-safe on its own: a function that keeps an input
// in its state until a later result calls Origin().Expect(2) on it
// before returning, and Acks it once the later result is handed on; or
// use [Window], which carries receipts through its windows itself.
//
// The stage's Stats report the keys held (StageStats.Keys). It takes the
// output options ([Buffer], [Chunk], [OnFull]); an error from a function
// fails the pipeline.
//
// Cost: the router hashes each key and copies the item into a batch for
// its worker (a channel operation per batch of up to 256 items, per
// worker); a worker pays a map lookup per item. Memory: one S and one map
// entry per key held. Panics if n < 1, Key or Item is nil, or IsControl
// is set without Control.
func Keyed[T any, K comparable, S any, U any](p *Pipeline, name string, in Stream[T], n int, fn KeyFuncs[T, K, S, U], opts ...StageOption) Stream[U] {
	defer guard(p)
	label := kindKeyed.label()
	checkWorkers(label, name, n)
	if fn.Key == nil {
		panic(fmt.Sprintf("sluice: %s %q: nil Key function", label, name))
	}
	checkFunc(label, name, fn.Item == nil)
	if fn.IsControl != nil && fn.Control == nil {
		panic(fmt.Sprintf("sluice: %s %q: IsControl is set but Control is nil", label, name))
	}
	if fn.TTL < 0 {
		panic(fmt.Sprintf("sluice: %s %q: TTL must be ≥ 0, got %v", label, name, fn.TTL))
	}
	cfg := stageOptions(kindKeyed, name, opts)
	kc := newKeyedCore[T, U](p, kindKeyed, name, in, n, false, cfg)
	r := &plainRouter[T, K]{hash: newKeyHash[K](), key: fn.Key, ctl: fn.IsControl}
	kc.start(r, func(i int, w *worker, out *sender[U]) keyWorker[T] {
		return newStateWorker(p, kc, i, out, fn)
	})
	return Stream[U]{kc.oe}
}

// plainRouter routes Keyed's items: by the hash of the key, or to every
// worker for a control item.
type plainRouter[T any, K comparable] struct {
	hash keyHash[K]
	key  func(T) K
	ctl  func(T) bool
}

func (r *plainRouter[T, K]) routeChunk(kc routeTo[T], c *chunk[T]) bool {
	return routeItems(kc, c, r.route)
}

func (r *plainRouter[T, K]) route(kc routeTo[T], v *T) bool {
	if r.ctl != nil && r.ctl(*v) {
		return kc.toAll(kmsg[T]{v: *v, ctl: true, wm: noMarker})
	}
	return kc.to(r.hash.of(r.key(*v)), kmsg[T]{v: *v})
}

func (r *plainRouter[T, K]) chunkDone(routeTo[T]) bool { return true }
func (r *plainRouter[T, K]) alarm() <-chan time.Time   { return nil }
func (r *plainRouter[T, K]) ring(routeTo[T]) bool      { return true }
func (r *plainRouter[T, K]) flush() bool               { return true }

// stateWorker is a Keyed worker: the states of the keys it owns.
type stateWorker[T any, K comparable, S any, U any] struct {
	p     *Pipeline
	ctx   context.Context
	fn    KeyFuncs[T, K, S, U]
	out   *sender[U]
	emit  func(U) bool
	m     map[K]*keyState[S]
	n     atomic.Int64 // keys held, for Stats
	rc    receipts[T]
	timer *time.Timer
	next  time.Time // next TTL scan
	clock time.Time // the time of the batch at hand
}

type keyState[S any] struct {
	s    S
	seen time.Time
}

func newStateWorker[T any, K comparable, S any, U any](p *Pipeline, kc *keyedCore[T, U], _ int, out *sender[U], fn KeyFuncs[T, K, S, U]) *stateWorker[T, K, S, U] {
	sw := &stateWorker[T, K, S, U]{p: p, ctx: p.ctx, fn: fn, out: out, m: make(map[K]*keyState[S]), rc: kc.rc}
	sw.emit = emitter(p, out)
	if fn.TTL > 0 {
		sw.timer = time.NewTimer(time.Hour)
		sw.timer.Stop()
		sw.next = time.Now().Add(fn.TTL / 4)
	}
	return sw
}

// emitter returns the emit function of a worker sending through out: a
// result that carries a receipt holds it (see FlatMap).
func emitter[U any](p *Pipeline, out *sender[U]) func(U) bool {
	if rout := receiptsOf[U](); rout != nil {
		return func(u U) bool {
			rout(&u, settleOp{hold: 1})
			if p.halted() {
				return false
			}
			out.stamp()
			return out.send(u)
		}
	}
	return func(u U) bool {
		if p.halted() {
			return false
		}
		out.stamp()
		return out.send(u)
	}
}

func (sw *stateWorker[T, K, S, U]) handle(m *kmsg[T]) error {
	if m.ctl {
		if err := sw.fn.Control(sw.ctx, m.v, sw.all, sw.emit); err != nil {
			return err
		}
	} else {
		k := sw.fn.Key(m.v)
		st := sw.m[k]
		if st == nil {
			st = new(keyState[S])
			sw.m[k] = st
			sw.n.Store(int64(len(sw.m)))
		}
		if sw.timer != nil {
			st.seen = sw.clock
		}
		if err := sw.fn.Item(sw.ctx, k, &st.s, m.v, sw.emit); err != nil {
			return err
		}
	}
	if sw.rc != nil {
		sw.rc(&m.v, ack)
	}
	return nil
}

// all iterates over the worker's keys and states.
func (sw *stateWorker[T, K, S, U]) all(yield func(K, *S) bool) {
	for k, st := range sw.m {
		if !yield(k, &st.s) {
			return
		}
	}
}

func (sw *stateWorker[T, K, S, U]) alarm() <-chan time.Time {
	if sw.timer == nil || len(sw.m) == 0 {
		return nil
	}
	sw.timer.Reset(max(0, time.Until(sw.next)))
	return sw.timer.C
}

// tick evicts the keys idle for TTL, every TTL/4.
func (sw *stateWorker[T, K, S, U]) tick(now time.Time) error {
	if sw.timer == nil {
		return nil
	}
	sw.clock = now
	if now.Before(sw.next) {
		return nil
	}
	sw.next = now.Add(sw.fn.TTL / 4)
	for k, st := range sw.m {
		if now.Sub(st.seen) < sw.fn.TTL {
			continue
		}
		if sw.p.halted() {
			return errStopped
		}
		if sw.fn.End != nil {
			if err := sw.fn.End(sw.ctx, k, &st.s, KeyEvicted, sw.emit); err != nil {
				return err
			}
		}
		delete(sw.m, k)
	}
	sw.n.Store(int64(len(sw.m)))
	return nil
}

func (sw *stateWorker[T, K, S, U]) end(bool) error {
	if sw.fn.End != nil {
		for k, st := range sw.m {
			if sw.p.halted() {
				return errStopped
			}
			if err := sw.fn.End(sw.ctx, k, &st.s, KeyFlushed, sw.emit); err != nil {
				return err
			}
		}
	}
	clear(sw.m)
	sw.n.Store(0)
	return nil
}

func (sw *stateWorker[T, K, S, U]) flush() bool { return sw.out.flush() }
func (sw *stateWorker[T, K, S, U]) flushHeld(start, now int64) bool {
	return sw.out.flushHeld(start, now)
}
func (sw *stateWorker[T, K, S, U]) keys() int64 { return sw.n.Load() }
