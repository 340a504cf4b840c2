package sluice

// How keyed stages hash their keys.

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"unsafe"
)

// keyHash hashes the keys of a keyed stage (Window, Keyed, Partition)
// under seeds drawn per stage. A key whose kind is string and at most 16
// bytes long, or an integer, is mixed with the seed by two 64-bit
// multiplications (about 65 instructions, calls included, against about
// 85 for hash/maphash's String and the runtime's hasher it calls); any
// other key goes to hash/maphash. The short path is a multiply mix
// under a random seed, of the kind the runtime hashes with where there
// are no AES instructions: TestKeyHashSpreadsKeys checks it spreads keys
// evenly over a Window worker's key slots and over workers or outputs,
// and the seed keeps an input from choosing colliding keys in advance.
type keyHash[K comparable] struct {
	kind  uint8 // hashOther, hashString or hashInt
	size  uintptr
	seed  uint64
	mseed maphash.Seed
}

const (
	hashOther = iota
	hashString
	hashInt
)

func newKeyHash[K comparable]() keyHash[K] {
	h := keyHash[K]{seed: rand.Uint64(), mseed: maphash.MakeSeed()}
	switch t := reflect.TypeFor[K](); t.Kind() {
	case reflect.String:
		h.kind = hashString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		h.kind, h.size = hashInt, t.Size()
	}
	return h
}

// of returns k's hash.
func (h *keyHash[K]) of(k K) uint64 {
	switch h.kind {
	case hashString:
		s := *(*string)(unsafe.Pointer(&k))
		if len(s) <= 16 {
			return shortHash(h.seed, s)
		}
		return maphash.String(h.mseed, s)
	case hashInt:
		var x uint64
		switch p := unsafe.Pointer(&k); h.size {
		case 8:
			x = *(*uint64)(p)
		case 4:
			x = uint64(*(*uint32)(p))
		case 2:
			x = uint64(*(*uint16)(p))
		default:
			x = uint64(*(*uint8)(p))
		}
		return mix64(x^h.seed, bits.RotateLeft64(h.seed, 32))
	}
	return maphash.Comparable(h.mseed, k)
}

// shortHash hashes s, at most 16 bytes long: its first and last 8 (or 4)
// bytes, overlapping when s is shorter, or for 1 to 3 bytes all of
// them; its length; each half mixed with the seed.
func shortHash(seed uint64, s string) uint64 {
	n := len(s)
	b := unsafe.Slice(unsafe.StringData(s), n) // read only
	var x, y uint64
	switch le := binary.LittleEndian; {
	case n >= 8:
		x, y = le.Uint64(b), le.Uint64(b[n-8:])
	case n >= 4:
		x, y = uint64(le.Uint32(b)), uint64(le.Uint32(b[n-4:]))
	case n > 0:
		x = uint64(b[0])<<16 | uint64(b[n>>1])<<8 | uint64(b[n-1])
	}
	return mix64(x^seed, y^bits.RotateLeft64(seed, 32)^uint64(n))
}

// mix64 mixes a and b into 64 bits: two full 64×64→128-bit products,
// each folded by xor, as wyhash does.
func mix64(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a^0xa0761d6478bd642f, b^0xe7037ed1a0b428db)
	hi, lo = bits.Mul64(hi^lo, 0x8ebc6af09c88c6e3)
	return hi ^ lo
}
