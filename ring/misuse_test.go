package ring

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/panictest"
)

// A nil context to a blocking form panics at once, naming the package and
// the method, whether or not the call would have had to wait.
func TestNilContextPanicsNamingRingAndTheMethod(t *testing.T) {
	var nilCtx context.Context
	forEachKind(t, func(t *testing.T, k kind) {
		q := k.new(2)
		panictest.Expect(t, "ring: ", func() { q.Push(nilCtx, 1) }, "nil context", ".Push")
		panictest.Expect(t, "ring: ", func() { q.PushMany(nilCtx, []int{1}) }, "nil context", ".PushMany")
		panictest.Expect(t, "ring: ", func() { q.Pop(nilCtx) }, "nil context", ".Pop")
		panictest.Expect(t, "ring: ", func() { q.PopMany(nilCtx, make([]int, 1)) }, "nil context", ".PopMany")
	})
}

// A capacity that is a power of two but cannot be allocated panics with the
// capacity, not with the runtime's makeslice error.
func TestHugeCapacityPanicsNamingRingAndTheCapacity(t *testing.T) {
	for _, c := range []int{1 << 62, 1 << 50} {
		panictest.Expect(t, "ring: ", func() { NewSPSC[int](c) }, "SPSC", "too large", strconv.Itoa(c))
		panictest.Expect(t, "ring: ", func() { NewMPSC[int](c) }, "MPSC", "too large", strconv.Itoa(c))
		panictest.Expect(t, "ring: ", func() { NewMPMC[int](c) }, "MPMC", "too large", strconv.Itoa(c))
	}
}

// A queue that was never made (a zero SPSC or MPSC) panics naming the type
// and its constructor. TryPush reported ErrFull and TryPop ErrEmpty for
// ever, and Push and Pop waited until their context was done: a zero
// queue looked like a full or empty one.
func TestZeroQueuePanicsNamingRingAndTheConstructor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // only to end a hang
	defer cancel()
	var s SPSC[int]
	panictest.Expect(t, "ring: ", func() { s.TryPush(1) }, "zero SPSC", "NewSPSC")
	panictest.Expect(t, "ring: ", func() { s.TryPushMany([]int{1}) }, "zero SPSC", "NewSPSC")
	panictest.Expect(t, "ring: ", func() { s.TryPop() }, "zero SPSC", "NewSPSC")
	panictest.Expect(t, "ring: ", func() { s.TryPopMany(make([]int, 1)) }, "zero SPSC", "NewSPSC")
	panictest.Expect(t, "ring: ", func() { s.Push(ctx, 1) }, "zero SPSC", "NewSPSC")
	panictest.Expect(t, "ring: ", func() { s.PushMany(ctx, []int{1}) }, "zero SPSC", "NewSPSC")
	panictest.Expect(t, "ring: ", func() { s.Pop(ctx) }, "zero SPSC", "NewSPSC")
	panictest.Expect(t, "ring: ", func() { s.PopMany(ctx, make([]int, 1)) }, "zero SPSC", "NewSPSC")
	var m MPSC[int]
	panictest.Expect(t, "ring: ", func() { m.TryPush(1) }, "zero MPSC", "NewMPSC")
	panictest.Expect(t, "ring: ", func() { m.TryPushMany([]int{1}) }, "zero MPSC", "NewMPSC")
	panictest.Expect(t, "ring: ", func() { m.Push(ctx, 1) }, "zero MPSC", "NewMPSC")
	panictest.Expect(t, "ring: ", func() { m.PushMany(ctx, []int{1}) }, "zero MPSC", "NewMPSC")
}
