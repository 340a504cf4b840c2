package chans_test

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/chans"
	"github.com/sluicehq/sluice/internal/panictest"
)

func TestMisusePanicsNamingChansAndTheValue(t *testing.T) {
	var nilCtx context.Context
	e := chans.NewElastic[int]()
	defer e.Close()
	panictest.Expect(t, "chans: ", func() { e.Pop(nilCtx) }, "nil context", "Elastic.Pop")
	panictest.Expect(t, "chans: ", func() { e.PopMany(nilCtx, make([]int, 1)) }, "nil context", "Elastic.PopMany")
	panictest.Expect(t, "chans: ", func() { chans.MergeContext(nilCtx, make(chan int)) }, "nil context", "MergeContext")
	panictest.Expect(t, "chans: ", func() { chans.NewElastic[int](chans.WithCapacity(4), nil) }, "nil ElasticOption", "index 1")
	// Capacities no allocation can hold: makeslice and makechan panicked
	// with bare runtime errors.
	huge := math.MaxInt
	panictest.Expect(t, "chans: ", func() { chans.NewElastic[int](chans.WithCapacity(huge)) }, "Elastic capacity", strconv.Itoa(huge), "too large")
	panictest.Expect(t, "chans: ", func() { chans.NewElasticChan[int](chans.WithCapacity(1 << 50)) }, "ElasticChan capacity", strconv.Itoa(1<<50), "too large")
	panictest.Expect(t, "chans: ", func() { chans.NewDropNewest[int](huge) }, "DropNewestChan capacity", strconv.Itoa(huge), "too large")
	panictest.Expect(t, "chans: ", func() { chans.NewDropOldest[[64]byte](1 << 45) }, "DropOldestQueue capacity", strconv.Itoa(1<<45), "too large")
	// Recv on an empty queue dereferenced the nil context.
	panictest.Expect(t, "chans: ", func() { chans.NewDropOldest[int](1).Recv(nilCtx) }, "nil context", "DropOldestQueue.Recv")
}
