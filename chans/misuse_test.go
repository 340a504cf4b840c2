package chans_test

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

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

// A zero DropNewestChan, DropOldestQueue or Elastic panics naming the type
// and its constructor. A zero DropNewestChan's Send silently dropped (and
// counted) every value and its Out never delivered; a zero DropOldestQueue's
// Recv and a zero Elastic's Pop waited until their context was done; a zero
// Elastic's In started a goroutine that would crash the program; Send on a
// zero DropOldestQueue and Close on a zero DropNewestChan gave bare runtime
// errors.
func TestZeroValuesPanicNamingChansAndTheConstructor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // only to end a hang
	defer cancel()
	// A fresh zero value each time: a panic must not leave one locked.
	panictest.Expect(t, "chans: ", func() { (&chans.DropNewestChan[int]{}).Send(1) }, "zero DropNewestChan", "NewDropNewest")
	panictest.Expect(t, "chans: ", func() { (&chans.DropNewestChan[int]{}).Out() }, "zero DropNewestChan", "NewDropNewest")
	panictest.Expect(t, "chans: ", func() { (&chans.DropNewestChan[int]{}).Close() }, "zero DropNewestChan", "NewDropNewest")
	panictest.Expect(t, "chans: ", func() { (&chans.DropOldestQueue[int]{}).Send(1) }, "zero DropOldestQueue", "NewDropOldest")
	panictest.Expect(t, "chans: ", func() { (&chans.DropOldestQueue[int]{}).Recv(ctx) }, "zero DropOldestQueue", "NewDropOldest")
	panictest.Expect(t, "chans: ", func() { (&chans.Elastic[int]{}).Pop(ctx) }, "zero Elastic", "NewElastic")
	panictest.Expect(t, "chans: ", func() { (&chans.Elastic[int]{}).In() }, "zero Elastic", "NewElastic")
	panictest.Expect(t, "chans: ", func() { (&chans.ElasticChan[int]{}).In() }, "zero ElasticChan", "NewElasticChan")
	panictest.Expect(t, "chans: ", func() { (&chans.ElasticChan[int]{}).Out() }, "zero ElasticChan", "NewElasticChan")
	panictest.Expect(t, "chans: ", func() { (&chans.ElasticChan[int]{}).Close() }, "zero ElasticChan", "NewElasticChan")
}
