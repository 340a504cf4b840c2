package sluice

// How a Window worker finds a key's record: by the hash of the key that
// the router worked out to pick the worker, so the worker hashes nothing.

// keyIndex holds a Window worker's key records by their hash: open
// addressing, linear probing from the hash's top bits (the router picks
// the worker by the low ones), at most half full. It never shrinks: it
// is as large as the most keys held at once.
type keyIndex[K comparable, A any] struct {
	slots []kslot[K, A]
	shift uint // 64 − log2(len(slots))
	n     int
}

type kslot[K comparable, A any] struct {
	h  uint64
	kw *wkey[K, A] // nil: empty
}

// get returns the record of key k of hash h, or nil.
func (t *keyIndex[K, A]) get(h uint64, k K) *wkey[K, A] {
	if t.n == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := h >> t.shift; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.kw == nil {
			return nil
		}
		if s.h == h && s.kw.k == k {
			return s.kw
		}
	}
}

// put adds kw, whose key is not held, under its hash kw.h.
func (t *keyIndex[K, A]) put(kw *wkey[K, A]) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.place(kslot[K, A]{h: kw.h, kw: kw})
	t.n++
}

func (t *keyIndex[K, A]) place(s kslot[K, A]) {
	mask := uint64(len(t.slots) - 1)
	i := s.h >> t.shift
	for t.slots[i].kw != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

func (t *keyIndex[K, A]) grow() {
	old := t.slots
	size, shift := 16, uint(60)
	if len(old) > 0 {
		size, shift = 2*len(old), t.shift-1
	}
	t.slots, t.shift = make([]kslot[K, A], size), shift
	for _, s := range old {
		if s.kw != nil {
			t.place(s)
		}
	}
}

// del removes kw and reports whether it was held. The entries after it
// in its run move back, so that no probe stops early at the hole.
func (t *keyIndex[K, A]) del(kw *wkey[K, A]) bool {
	if t.n == 0 {
		return false
	}
	mask := uint64(len(t.slots) - 1)
	i := kw.h >> t.shift
	for t.slots[i].kw != kw {
		if t.slots[i].kw == nil {
			return false
		}
		i = (i + 1) & mask
	}
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s.kw == nil {
			break
		}
		// s may fill the hole at i if its home is not in (i, j].
		if (j-s.h>>t.shift)&mask >= (j-i)&mask {
			t.slots[i] = s
			i = j
		}
	}
	t.slots[i] = kslot[K, A]{}
	t.n--
	return true
}

// clear empties the index, keeping its room.
func (t *keyIndex[K, A]) clear() {
	clear(t.slots)
	t.n = 0
}
