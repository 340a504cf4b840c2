package sluice

import (
	"reflect"
	"sync"
	"testing"
)

type walked struct {
	Receipt
	v int
}

// TestWalkerOfIsRightOnConcurrentFirstUse asks for the walker of types
// never seen before from several goroutines at once: every one must get
// a walker, none the "carries nothing" answer of a lookup in progress.
func TestWalkerOfIsRightOnConcurrentFirstUse(t *testing.T) {
	elem := reflect.TypeFor[walked]()
	for k := 1; k <= 200; k++ {
		typ := reflect.SliceOf(reflect.ArrayOf(k, elem)) // a type no earlier round used
		var start, wg sync.WaitGroup
		start.Add(1)
		nils := make([]bool, 8)
		for g := range nils {
			wg.Go(func() {
				start.Wait()
				nils[g] = walkerOf(typ) == nil
			})
		}
		start.Done()
		wg.Wait()
		for g, isNil := range nils {
			if isNil {
				t.Fatalf("%v: goroutine %d of %d got no walker", typ, g, len(nils))
			}
		}
	}
}

// TestWalkerOfASelfContainingTypeIsNil checks the recursion guard: a
// slice of itself carries no receipt and does not loop.
func TestWalkerOfASelfContainingTypeIsNil(t *testing.T) {
	type self []self
	if walkerOf(reflect.TypeFor[self]()) != nil {
		t.Fatal("got a walker for a type that carries no receipt")
	}
}
