package chans_test

import (
	"runtime"
	"testing"
	"testing/synctest"
	"weak"

	"github.com/sluicehq/sluice/chans"
)

type payload struct{ b [64]byte }

// reachable returns the indexes of the values of ws still reachable after
// a garbage collection.
func reachable(ws []weak.Pointer[payload]) []int {
	runtime.GC()
	runtime.GC()
	var live []int
	for i, w := range ws {
		if w.Value() != nil {
			live = append(live, i)
		}
	}
	return live
}

// Once a value has been received from Out, Elastic keeps nothing that
// holds it, like a channel (the queue clears its slots as it reads them).
// The goroutine kept the last value it handed to a full Out while parked,
// and the last value it received from In while parked, until the next one.
func TestElasticKeepsNothingItDelivered(t *testing.T) {
	for _, viaIn := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			e := chans.NewElastic[*payload]()
			defer e.Close()
			out := e.Out()
			n := cap(out) + 5 // the last few wait in the queue and in the goroutine
			ws := make([]weak.Pointer[payload], n)
			for i := range n {
				p := new(payload)
				ws[i] = weak.Make(p)
				if viaIn {
					e.In() <- p
					synctest.Wait() // received by the parked goroutine
				} else {
					e.Push(p)
				}
			}
			synctest.Wait()
			for range n {
				<-out
				synctest.Wait() // the goroutine hands the next one over while parked
			}
			if live := reachable(ws); len(live) > 0 {
				t.Fatalf("via In %v: values %v still reachable after they were received", viaIn, live)
			}
		})
	}
}

func TestElasticChanKeepsNothingItDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := chans.NewElasticChan[*payload]()
		defer c.Close()
		n := cap(c.Out()) + 5
		ws := make([]weak.Pointer[payload], n)
		for i := range n {
			p := new(payload)
			ws[i] = weak.Make(p)
			c.In() <- p
			synctest.Wait()
		}
		for range n {
			<-c.Out()
			synctest.Wait()
		}
		if live := reachable(ws); len(live) > 0 {
			t.Fatalf("values %v still reachable after they were received", live)
		}
	})
}
