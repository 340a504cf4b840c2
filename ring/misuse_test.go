package ring

import (
	"context"
	"strconv"
	"testing"

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
