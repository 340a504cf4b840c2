package sluice

// How a Window worker finds a key's record: by the hash of the key that
// the router worked out to pick the worker, so the worker hashes nothing.

import "math"

// keyIndex holds a Window worker's key records by their hash: open
// addressing, linear probing from the hash's top bits (the router picks
// the worker by the low ones), at most half full. It never shrinks: it
// is as large as the most keys held at once.
type keyIndex[K comparable, A any] struct {
	slots []kslot[K, A]
	shift uint // 64 − log2(len(slots))
	n     int
}

// kslot is one key in a keyIndex: its hash, the key and the window
// opened last, where most items go, kept here so that the item of a key
// held reaches its window with one pointer chased (the window) rather
// than three (the key's record, its last window, the window).
type kslot[K comparable, A any] struct {
	h    uint64
	k    K
	kw   *wkey[K, A] // nil: empty
	last *win[K, A]  // the key's window opened last; nil once dropped
	// done is the end of the key's latest window emitted and dropped
	// (math.MinInt64: none; window_rejoin.go), read for every item.
	done int64
}

// get returns the slot of key k of hash h, or nil. The slot moves at the
// next put or del.
func (t *keyIndex[K, A]) get(h uint64, k K) *kslot[K, A] {
	if t.n == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := h >> t.shift; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.kw == nil {
			return nil
		}
		if s.h == h && s.k == k {
			return s
		}
	}
}

// slotOf returns kw's slot, or nil if kw is not held.
func (t *keyIndex[K, A]) slotOf(kw *wkey[K, A]) *kslot[K, A] {
	if t.n == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := kw.h >> t.shift; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.kw == kw {
			return s
		}
		if s.kw == nil {
			return nil
		}
	}
}

// put adds kw, whose key is not held, under its hash kw.h, and returns
// its slot.
func (t *keyIndex[K, A]) put(kw *wkey[K, A]) *kslot[K, A] {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	t.n++
	return t.place(kslot[K, A]{h: kw.h, k: kw.k, kw: kw, done: math.MinInt64})
}

func (t *keyIndex[K, A]) place(s kslot[K, A]) *kslot[K, A] {
	mask := uint64(len(t.slots) - 1)
	i := s.h >> t.shift
	for t.slots[i].kw != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = s
	return &t.slots[i]
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
