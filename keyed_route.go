package sluice

// The router's side of a keyed stage: the batches it fills for each
// worker and hands on.

// routeItems routes each item of c with route, its trace (when traced)
// set on the router's worker first; false when route does. Small enough
// to be inlined into each router's routeChunk, where route, a method
// value, becomes a direct call.
func routeItems[T any](kc routeTo[T], c *chunk[T], route func(routeTo[T], *T) bool) bool {
	for j := range c.items {
		if c.traces != nil {
			kc.rw.trace = c.traces[j]
		}
		if !route(kc, &c.items[j]) {
			return false
		}
	}
	return true
}

// batch returns an empty batch, a recycled one if there is one.
func (kc *kroute[T]) batch() *kbatch[T] {
	if b, _ := kc.pool.Get().(*kbatch[T]); b != nil {
		return b
	}
	return &kbatch[T]{items: make([]kmsg[T], 0, kbatchSize)}
}

// recycle empties b, zeroing the messages and traces it held (put relies
// on a batch's unused messages being zero), and keeps it for batch.
func (kc *kroute[T]) recycle(b *kbatch[T]) {
	clear(b.items)
	b.items = b.items[:0]
	clear(b.traces)
	b.traces = b.traces[:0]
	kc.pool.Put(b)
}

// to appends m to the batch of the worker that owns hash.
func (kc *kroute[T]) to(hash uint64, m kmsg[T]) bool {
	p := kc.put(hash)
	if p == nil {
		return false
	}
	*p = m
	p.h = hash
	return true
}

// put returns the next message of the batch of the worker that owns
// hash, zero but for its hash, for the caller to fill in place (an item
// is copied once, not twice); nil when the pipeline stops. A full batch
// is handed on when its worker's next message comes, or by sendAll.
func (kc *kroute[T]) put(hash uint64) *kmsg[T] {
	i := 0
	if kc.n > 1 {
		i = int(hash % uint64(kc.n))
	}
	b := kc.bufs[i]
	if b == nil || len(b.items) == kbatchSize {
		if b = kc.fresh(i); b == nil {
			return nil
		}
	}
	b.items = b.items[:len(b.items)+1]
	m := &b.items[len(b.items)-1]
	m.h = hash
	if kc.traced {
		b.traces = append(b.traces, kc.rw.trace)
	}
	return m
}

// fresh hands worker i's full batch on, if any, and gives it an empty
// one; nil when the pipeline stops.
func (kc *kroute[T]) fresh(i int) *kbatch[T] {
	if kc.bufs[i] != nil && !kc.send(i) {
		return nil
	}
	b := kc.batch()
	kc.bufs[i] = b
	return b
}

// toAll appends m to every worker's batch, holding its receipts once per
// extra copy.
func (kc *kroute[T]) toAll(m kmsg[T]) bool {
	if kc.n > 1 && !m.isMarker() {
		if kc.rc != nil {
			kc.rc(&m.v, settleOp{hold: int32(kc.n - 1)})
		}
	}
	for i := range kc.n {
		if !kc.to(uint64(i), m) {
			return false
		}
	}
	return true
}

// isMarker reports whether m is a Window's watermark marker (no item).
func (m *kmsg[T]) isMarker() bool { return m.ctl && m.wm != noMarker }

// noMarker is the wm of a control item that is not a watermark marker.
const noMarker = -1 << 63

// send hands worker i's batch on, waiting for room; inline, it handles
// it at once.
func (kc *kroute[T]) send(i int) bool {
	b := kc.bufs[i]
	kc.bufs[i] = nil
	if kc.inline {
		if err := kc.run(b); err != nil {
			kc.err = err
			return false
		}
		return true
	}
	select {
	case kc.qs[i] <- b:
		return true
	default:
	}
	w := kc.s.workers[0]
	w.waitRoom()
	defer w.resume()
	select {
	case kc.qs[i] <- b:
		return true
	case <-kc.p.ctx.Done():
		return false
	}
}

// sendAll hands every partial batch on.
func (kc *kroute[T]) sendAll() bool {
	for i, b := range kc.bufs {
		if b != nil && len(b.items) > 0 && !kc.send(i) {
			return false
		}
	}
	return true
}
