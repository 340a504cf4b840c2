package sluice

import (
	"fmt"
	"hash/maphash"
	"math"
	"strings"
	"testing"
)

// TestKeyHashSpreadsKeys hashes many distinct keys of each kind with a
// fast path — strings of every length up to 16 and past it, integers of
// several sizes — and checks that no two collide in 64 bits and that
// their top 4 bits (the first that pick a key's slot) and their value
// mod 2 and 3 (which pick its worker) spread evenly.
func TestKeyHashSpreadsKeys(t *testing.T) {
	check := func(name string, hs []uint64) {
		t.Helper()
		seen := make(map[uint64]bool, len(hs))
		var top [16]int
		var mod2 [2]int
		var mod3 [3]int
		for _, h := range hs {
			if seen[h] {
				t.Fatalf("%s: hash %#x twice among %d keys", name, h, len(hs))
			}
			seen[h] = true
			top[h>>60]++
			mod2[h%2]++
			mod3[h%3]++
		}
		// Binomial spread: within 6 standard deviations of the mean.
		even := func(got []int) bool {
			n, p := float64(len(hs)), 1/float64(len(got))
			mean, sd := n*p, math.Sqrt(n*p*(1-p))
			for _, c := range got {
				if math.Abs(float64(c)-mean) > 6*sd {
					return false
				}
			}
			return true
		}
		if !even(top[:]) || !even(mod2[:]) || !even(mod3[:]) {
			t.Fatalf("%s: uneven: top 4 bits %v, mod 2 %v, mod 3 %v", name, top, mod2, mod3)
		}
	}
	hs := newKeyHash[string]()
	for n := 1; n <= 20; n++ {
		seen := map[string]bool{}
		var keys []uint64
		for i := range 50_000 {
			s := fmt.Sprintf("%0*d", n, i)
			if len(s) > n { // n digits cannot say i: letters instead
				s = strings.Repeat("k", n-1) + string(rune('a'+i%26))
			}
			if !seen[s] {
				seen[s] = true
				keys = append(keys, hs.of(s))
			}
		}
		check(fmt.Sprintf("strings of %d bytes", n), keys)
	}
	var syms []uint64
	for i := range 500 {
		syms = append(syms, hs.of(fmt.Sprintf("S%03d", i)))
	}
	check("500 symbols", syms)

	i64, u32, i16 := newKeyHash[int64](), newKeyHash[uint32](), newKeyHash[int16]()
	var a, b, c []uint64
	for i := range 60_000 {
		a = append(a, i64.of(int64(i)<<20)) // the low bits all zero
		b = append(b, u32.of(uint32(i)))
		c = append(c, i16.of(int16(i-30_000)))
	}
	check("int64 keys", a)
	check("uint32 keys", b)
	check("int16 keys", c)
}

// TestKeyHashIsAFunctionOfTheKeyAndTheSeed: equal keys hash alike, the
// empty string and struct keys (no fast path) included; two stages hash
// the same keys apart, so that an input cannot pick keys that collide in
// every process.
func TestKeyHashIsAFunctionOfTheKeyAndTheSeed(t *testing.T) {
	a, b := newKeyHash[string](), newKeyHash[string]()
	same := 0
	for i := range 1000 {
		k := fmt.Sprint(i)
		if a.of(k) != a.of(strings.Clone(k)) {
			t.Fatalf("key %q hashes two ways", k)
		}
		if a.of(k) == b.of(k) {
			same++
		}
	}
	if same > 0 {
		t.Fatalf("%d keys of 1000 hash alike under two seeds", same)
	}
	if a.of("") != a.of(strings.Clone("")) || a.of("") == a.of("\x00") {
		t.Fatal("the empty string's hash is not its own")
	}
	long := strings.Repeat("x", 40)
	if a.of(long+"1") == a.of(long+"2") || a.of(long+"1") != a.of(strings.Clone(long+"1")) {
		t.Fatal("a long string key's hash is not a function of the key")
	}
	type pair struct {
		s string
		n int
	}
	p := newKeyHash[pair]()
	if p.of(pair{"x", 1}) != p.of(pair{"x", 1}) || p.of(pair{"x", 1}) == p.of(pair{"x", 2}) {
		t.Fatal("a struct key's hash is not a function of the key")
	}
}

// BenchmarkKeyHash: a short string key, as a keyed stage hashes
// it, against hash/maphash's String (the baseline, in the same run).
func BenchmarkKeyHash(b *testing.B) {
	keys := make([]string, 512)
	for i := range keys {
		keys[i] = fmt.Sprintf("S%03d", i)
	}
	var sink uint64
	b.Run("keyHash", func(b *testing.B) {
		h := newKeyHash[string]()
		for i := 0; b.Loop(); i++ {
			sink += h.of(keys[i&511])
		}
	})
	b.Run("maphash", func(b *testing.B) {
		seed := maphash.MakeSeed()
		for i := 0; b.Loop(); i++ {
			sink += maphash.String(seed, keys[i&511])
		}
	})
	if sink == 0 {
		b.Fatal("no hash")
	}
}
