package par_test

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/par"
)

func ExampleSum() {
	xs := make([]int, 1_000_000)
	for i := range xs {
		xs[i] = i
	}
	fmt.Println(par.Sum(xs))             // a million elements: shared among the CPUs
	fmt.Println(par.Sum([]int{1, 2, 3})) // below the cut-off: the caller alone
	// Output:
	// 499999500000
	// 6
}

func ExampleFor() {
	// Each call writes only its own element, so no locking is needed.
	squares := make([]int, 5)
	par.For(len(squares), func(i int) { squares[i] = i * i })
	fmt.Println(squares)
	// Output: [0 1 4 9 16]
}

func ExampleMap() {
	words := []string{"sluice", "gate", "weir"}
	fmt.Println(par.Map(words, strings.ToUpper))
	// Output: [SLUICE GATE WEIR]
}

func ExampleReduce() {
	// Concatenation is associative but not commutative: Reduce keeps the
	// order. The zero value is folded in once, on the left.
	words := []string{"a", "b", "c", "d"}
	fmt.Println(par.Reduce(words, ">", func(a, b string) string { return a + b }))
	// Output: >abcd
}

func ExampleGrain() {
	// Three long items: Grain(1) shares them among the CPUs from the
	// start, where the default would run the first one alone to time it.
	pages := []string{"page one", "page two", "page three"}
	lengths := par.Map(pages, func(p string) int { return len(p) }, par.Grain(1))
	fmt.Println(lengths)
	// Output: [8 8 10]
}
