package chans_test

import (
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkPushPrimitives backs a claim in Elastic's design notes (README
// status): a lock-free multi-producer push would not be cheaper than
// Elastic's mutex round trip in Go. Both variants store one value into a
// ring of 4096 slots, alone on one goroutine: "mutex" under a sync.Mutex
// (lock and unlock: two locked instructions), "claim+publish" as a
// lock-free multi-producer queue must, claiming the slot with an atomic add
// and publishing it with an atomic store (XCHG on amd64: two locked
// instructions as well). Each checks the last lap it wrote.
func BenchmarkPushPrimitives(b *testing.B) {
	const slots = 4096
	b.Run("mutex", func(b *testing.B) {
		var mu sync.Mutex
		buf := make([]int, slots)
		n := 0
		for b.Loop() {
			mu.Lock()
			buf[n%slots] = n
			n++
			mu.Unlock()
		}
		checkLap(b, buf, n)
	})
	b.Run("claim+publish", func(b *testing.B) {
		var tail atomic.Uint64
		buf := make([]int, slots)
		seq := make([]atomic.Uint64, slots)
		for b.Loop() {
			i := tail.Add(1) - 1
			buf[i%slots] = int(i)
			seq[i%slots].Store(i + 1)
		}
		n := int(tail.Load())
		checkLap(b, buf, n)
		if n > 0 && seq[(n-1)%slots].Load() != uint64(n) {
			b.Fatalf("slot %d not published", (n-1)%slots)
		}
	})
}

// checkLap fails b unless the last min(n, len(buf)) values written, n-1
// downwards, are in their slots.
func checkLap(b *testing.B, buf []int, n int) {
	for v := n - 1; v >= max(0, n-len(buf)); v-- {
		if buf[v%len(buf)] != v {
			b.Fatalf("slot %d holds %d, want %d", v%len(buf), buf[v%len(buf)], v)
		}
	}
}
