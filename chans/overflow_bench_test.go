package chans_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/chans"
)

// The overflow channels against seed 004's pattern written inline on a plain
// channel: a non-blocking send whose default case bumps an atomic counter.
// "full": nobody receives, so after the first capacity values every send
// drops. "drained": a consumer receives concurrently; whatever it misses is
// dropped. Each benchmark checks that received + dropped = sent.

const overflowCap = 1024

type overflowKind struct {
	name string
	// mk returns send, a blocking receive (ok false once closed and
	// drained), the drop counter, and close.
	mk func() (send func(int) bool, recv func() (int, bool), dropped func() uint64, close func())
}

var overflowKinds = []overflowKind{
	{"SeedSelectDefault", func() (func(int) bool, func() (int, bool), func() uint64, func()) {
		ch := make(chan int, overflowCap)
		var drops atomic.Uint64
		send := func(v int) bool {
			select {
			case ch <- v:
				return true
			default:
				drops.Add(1)
				return false
			}
		}
		recv := func() (int, bool) { v, ok := <-ch; return v, ok }
		return send, recv, drops.Load, func() { close(ch) }
	}},
	{"DropNewest", func() (func(int) bool, func() (int, bool), func() uint64, func()) {
		d := chans.NewDropNewest[int](overflowCap)
		recv := func() (int, bool) { v, ok := <-d.Out(); return v, ok }
		return d.Send, recv, d.Dropped, d.Close
	}},
	{"DropOldest", func() (func(int) bool, func() (int, bool), func() uint64, func()) {
		d := chans.NewDropOldest[int](overflowCap)
		recv := func() (int, bool) {
			v, err := d.Recv(context.Background())
			return v, err == nil
		}
		return d.Send, recv, d.Dropped, d.Close
	}},
}

func BenchmarkOverflow(b *testing.B) {
	const n = 1 << 16
	for _, shape := range []string{"full", "drained"} {
		for _, k := range overflowKinds {
			b.Run(fmt.Sprintf("%s/%s", shape, k.name), func(b *testing.B) {
				done := perItem(b, n)
				for b.Loop() {
					send, recv, dropped, closeIt := k.mk()
					received := make(chan int)
					if shape == "drained" {
						go func() {
							c := 0
							for {
								if _, ok := recv(); !ok {
									break
								}
								c++
							}
							received <- c
						}()
					}
					for i := range n {
						send(i)
					}
					closeIt()
					got := 0
					if shape == "drained" {
						got = <-received
					} else {
						for {
							if _, ok := recv(); !ok {
								break
							}
							got++
						}
					}
					if total := uint64(got) + dropped(); total != n {
						b.Fatalf("received %d + dropped %d = %d, want %d", got, dropped(), total, n)
					}
				}
				done()
			})
		}
	}
}
