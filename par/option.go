package par

import "fmt"

// An Option changes how For, Map and Reduce split their work.
type Option interface{ apply(config) config }

type config struct {
	grain int // items per block; 0 means "measure" (see the package doc)
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o == nil {
			panic("par: nil Option")
		}
		c = o.apply(c) // by value: a pointer through an interface would escape
	}
	return c
}

type grainOption int

func (g grainOption) apply(c config) config {
	c.grain = int(g)
	return c
}

// Grain fixes the block size at n items and turns off timing: a call runs
// on the calling goroutine alone when it has fewer than 2n items (or
// GOMAXPROCS is 1), and otherwise on min(GOMAXPROCS, ⌈items/n⌉) goroutines
// (the caller and helpers) that take blocks of n consecutive items in turn.
// Reduce's result then depends only on the input and n, never on timing or
// GOMAXPROCS.
//
// Use Grain(1) when a few items each take long (files, requests, big
// matrices): the default measures the first item alone before it starts
// helpers. Choose n so that one block takes at least a few microseconds.
// Grain panics if n < 1.
func Grain(n int) Option {
	if n < 1 {
		panic(fmt.Sprintf("par: Grain needs n ≥ 1, got %d", n))
	}
	return grainOption(n)
}
