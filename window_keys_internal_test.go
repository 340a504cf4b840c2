package sluice

import (
	"math/rand/v2"
	"testing"
)

// TestKeyIndexMatchesAMap runs random puts, gets and dels on a keyIndex
// and on a map in step: every get and del answers as the map does, and
// the count agrees. The hashes come from a small range, so that runs of
// colliding slots, wrapping past the end, are deleted from the middle.
func TestKeyIndexMatchesAMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var ix keyIndex[int, int]
		ref := map[int]*wkey[int, int]{}
		hash := func(k int) uint64 {
			// Top bits pick the slot: few distinct ones, many collisions,
			// some equal hashes for different keys.
			return uint64(k%13)<<59 | uint64(k%3)
		}
		for range 20_000 {
			k := rng.IntN(300)
			switch rng.IntN(3) {
			case 0:
				if ref[k] == nil {
					kw := &wkey[int, int]{k: k, h: hash(k)}
					ref[k] = kw
					ix.put(kw)
				}
			case 1:
				if got, want := kwOf(ix.get(hash(k), k)), ref[k]; got != want {
					t.Fatalf("seed %d: get(%d) = %p, want %p", seed, k, got, want)
				}
			case 2:
				kw := ref[k]
				if kw == nil {
					kw = &wkey[int, int]{k: k, h: hash(k)}
				}
				if got, want := ix.del(kw), ref[k] != nil; got != want {
					t.Fatalf("seed %d: del(%d) = %v, want %v", seed, k, got, want)
				}
				delete(ref, k)
			}
			if ix.n != len(ref) {
				t.Fatalf("seed %d: %d keys held, want %d", seed, ix.n, len(ref))
			}
		}
		for k, kw := range ref {
			if got := kwOf(ix.get(kw.h, k)); got != kw {
				t.Fatalf("seed %d: at the end get(%d) = %p, want %p", seed, k, got, kw)
			}
		}
		ix.clear()
		if ix.n != 0 || ix.get(hash(1), 1) != nil {
			t.Fatalf("seed %d: clear left %d keys", seed, ix.n)
		}
	}
}

func kwOf[K comparable, A any](s *kslot[K, A]) *wkey[K, A] {
	if s == nil {
		return nil
	}
	return s.kw
}
