package chans_test

import (
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/chans"
	"github.com/sluicehq/sluice/internal/panictest"
)

func TestElasticChanNeverBlocksTheSenderAndKeepsOrder(t *testing.T) {
	c := chans.NewElasticChan[int](chans.WithCapacity(16))
	defer c.Close()
	const n = 100_000 // far beyond both ends' buffers: the queue holds the rest
	for i := range n {
		c.In() <- i
	}
	close(c.In())
	receiveInOrder(t, c.Out(), n)
}

// receiveInOrder receives from out until it closes and checks it got
// 0..n-1 in order.
func receiveInOrder(t *testing.T, out <-chan int, n int) {
	t.Helper()
	next := 0
	for v := range out {
		if v != next {
			t.Fatalf("received %d, want %d", v, next)
		}
		next++
	}
	if next != n {
		t.Fatalf("received %d values, want %d", next, n)
	}
}

func TestElasticChanConcurrentProducerAndConsumerKeepOrder(t *testing.T) {
	c := chans.NewElasticChan[int]()
	defer c.Close()
	const n = 200_000
	go func() {
		for i := range n {
			c.In() <- i
		}
		close(c.In())
	}()
	receiveInOrder(t, c.Out(), n)
}

// While a consumer drains, Len may miss values in transit but never counts
// more than the ElasticChan holds: at most what was sent and not yet
// received. (It overstated by up to the size of Out's buffer when it read
// the queue before Out.)
func TestElasticChanLenNeverOverstatesWhileDraining(t *testing.T) {
	c := chans.NewElasticChan[int]()
	defer c.Close()
	const n = 50_000
	for i := range n {
		c.In() <- i
	}
	for received := 0; received < n; received++ {
		if got, most := c.Len(), n-received; got > most {
			t.Fatalf("after %d received: Len = %d, want ≤ %d", received, got, most)
		}
		<-c.Out()
	}
	if got := c.Len(); got != 0 {
		t.Fatalf("drained: Len = %d, want 0", got)
	}
}

func TestElasticLenNeverOverstatesWhileDraining(t *testing.T) {
	e := chans.NewElastic[int]()
	defer e.Close()
	const n = 50_000
	for i := range n {
		e.In() <- i
	}
	out := e.Out()
	for received := 0; received < n; received++ {
		if got, most := e.Len(), n-received; got > most {
			t.Fatalf("after %d received: Len = %d, want ≤ %d", received, got, most)
		}
		<-out
	}
	if got := e.Len(); got != 0 {
		t.Fatalf("drained: Len = %d, want 0", got)
	}
}

func TestElasticChanCloseStopsTheRelayAndClosesOut(t *testing.T) {
	c := chans.NewElasticChan[int]()
	for i := range 10_000 {
		c.In() <- i
	}
	c.Close()
	c.Close() // harmless
	n := 0
	for range c.Out() {
		n++
	}
	if n > 10_000 {
		t.Fatalf("received %d values after Close, want at most the 10000 sent", n)
	}
	// goleak (TestMain) checks that the relay has returned.
}

func TestElasticChanCloseAfterTheInputEndedIsHarmless(t *testing.T) {
	c := chans.NewElasticChan[string]()
	c.In() <- "a"
	close(c.In())
	if v := <-c.Out(); v != "a" {
		t.Fatalf("received %q, want a", v)
	}
	if _, ok := <-c.Out(); ok {
		t.Fatal("Out still open after the input ended and drained")
	}
	c.Close()
}

func TestElasticChanOptionsPanicNamingChans(t *testing.T) {
	panictest.Expect(t, "chans: ", func() { chans.NewElasticChan[int](chans.WithLimit(8, chans.Block)) }, "WithLimit(8, Block)")
	panictest.Expect(t, "chans: ", func() { chans.NewElasticChan[int](nil) }, "nil ElasticOption", "index 0")
}

// Close stops the goroutine at once, whatever the traffic: it must return
// while a producer and a consumer keep In and Out busy. (ElasticChan's
// relay looked for Close only when it parked, and with both ends busy it
// never parked: under GOMAXPROCS=1 Close waited as long as the traffic
// lasted.) The time limit only catches a Close that does not return.
func TestCloseReturnsUnderSustainedTraffic(t *testing.T) {
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	t.Run("ElasticChan", func(t *testing.T) {
		c := chans.NewElasticChan[int]()
		closeUnderTraffic(t, c.In(), c.Out(), c.Close)
	})
	t.Run("Elastic", func(t *testing.T) {
		e := chans.NewElastic[int]()
		closeUnderTraffic(t, e.In(), e.Out(), e.Close)
	})
}

func closeUnderTraffic(t *testing.T, in chan<- int, out <-chan int, closeIt func()) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case in <- i:
			case <-stop:
				return
			}
		}
	})
	wg.Go(func() {
		for range out {
		}
	})
	time.Sleep(10 * time.Millisecond) // traffic flows
	closed := make(chan struct{})
	go func() {
		closeIt()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Errorf("Close has not returned after 5s of traffic")
	}
	close(stop)
	<-closed
	wg.Wait()
}

// After Close, Len counts only what Out still holds: nothing receives from
// In any more, so values in In's buffer will never be delivered. (Len kept
// counting them, for good.)
func TestLenAfterCloseCountsOnlyWhatOutHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := chans.NewElastic[int](chans.WithLimit(1, chans.Block))
		e.Push(1)
		e.In() <- 2 // waits in In's buffer: the queue is at its limit
		synctest.Wait()
		e.Close()
		if got := e.Len(); got != 0 {
			t.Fatalf("Elastic: Len() = %d after Close with Out unused, want 0", got)
		}

		c := chans.NewElasticChan[int]()
		c.Close()
		c.In() <- 1 // buffered, never received
		if got := c.Len(); got != 0 {
			t.Fatalf("ElasticChan: Len() = %d after Close, want 0", got)
		}
	})
}
