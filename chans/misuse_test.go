package chans_test

import (
	"context"
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
	// Recv on an empty queue dereferenced the nil context.
	panictest.Expect(t, "chans: ", func() { chans.NewDropOldest[int](1).Recv(nilCtx) }, "nil context", "DropOldestQueue.Recv")
}
