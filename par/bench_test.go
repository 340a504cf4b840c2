package par_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/sluicehq/sluice/internal/seeds"
	"github.com/sluicehq/sluice/par"
)

// perItem reports ns/item for a benchmark that handles n items per op.
func perItem(b *testing.B, n int) {
	b.Helper()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/item")
}

// BenchmarkSum compares par.Sum with seed 003's three sums in the same run:
// serial (FindSum, the baseline for ratios), split per GOMAXPROCS
// (FindSumSplit) and goroutine per element (FindSumConc, only up to 10k:
// at 1M it takes ~0.3 s). kernel is par.Sum under GOMAXPROCS=1: its own
// serial speed, to separate the faster loop from the use of two CPUs.
func BenchmarkSum(b *testing.B) {
	for _, n := range []int{100, 10_000, 524_288, 1_000_000} { // 524288: the cut-off
		xs := ints(n)
		want := seeds.FindSum(xs)
		procs := runtime.GOMAXPROCS(0)
		sums := []struct {
			name string
			sum  func([]int) int
		}{
			{"serial", seeds.FindSum},
			{"par", par.Sum[int]},
			{"kernel", par.Sum[int]},
			{"split", func(xs []int) int { return seeds.FindSumSplit(procs, xs) }},
			{"conc", seeds.FindSumConc},
		}
		for _, s := range sums {
			if s.name == "conc" && n > 10_000 || s.name == "split" && n == 524_288 {
				continue
			}
			b.Run(fmt.Sprintf("n=%d/%s", n, s.name), func(b *testing.B) {
				if s.name == "kernel" {
					defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
				}
				for b.Loop() {
					if got := s.sum(xs); got != want {
						b.Fatalf("%s = %d, want %d", s.name, got, want)
					}
				}
				perItem(b, n)
			})
		}
	}
}

// BenchmarkMapCheap maps a ~1 ns function: the case where the cut-off
// matters most. serial is a plain loop into a new slice.
func BenchmarkMapCheap(b *testing.B) {
	f := func(x int) int { return x*2 + 1 }
	for _, n := range []int{100, 10_000, 1_000_000} {
		xs := ints(n)
		maps := []struct {
			name string
			m    func([]int) []int
		}{
			{"serial", func(xs []int) []int {
				out := make([]int, len(xs))
				for i, x := range xs {
					out[i] = f(x)
				}
				return out
			}},
			{"par", func(xs []int) []int { return par.Map(xs, f) }},
		}
		for _, m := range maps {
			b.Run(fmt.Sprintf("n=%d/%s", n, m.name), func(b *testing.B) {
				var out []int
				for b.Loop() {
					out = m.m(xs)
				}
				perItem(b, n)
				for i, x := range xs {
					if out[i] != f(x) {
						b.Fatalf("out[%d] = %d, want %d", i, out[i], f(x))
					}
				}
			})
		}
	}
}

// BenchmarkForSlow runs items of ~2 µs: few enough that a fixed default
// grain would keep them serial. grain1 is For with Grain(1).
func BenchmarkForSlow(b *testing.B) {
	for _, n := range []int{4, 100, 1000} {
		want := spin(2000)
		for _, name := range []string{"serial", "par", "grain1"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, name), func(b *testing.B) {
				out := make([]int, n)
				f := func(i int) { out[i] = spin(2000) }
				for b.Loop() {
					clear(out)
					switch name {
					case "serial":
						for i := range n {
							f(i)
						}
					case "par":
						par.For(n, f)
					case "grain1":
						par.For(n, f, par.Grain(1))
					}
				}
				perItem(b, n)
				for i, got := range out {
					if got != want {
						b.Fatalf("out[%d] = %d, want %d", i, got, want)
					}
				}
			})
		}
	}
}

// BenchmarkReduce folds ints with +: serial is a plain left fold.
func BenchmarkReduce(b *testing.B) {
	add := func(a, b int) int { return a + b }
	for _, n := range []int{100, 10_000, 1_000_000} {
		xs := ints(n)
		want := seeds.FindSum(xs)
		for _, name := range []string{"serial", "par"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, name), func(b *testing.B) {
				for b.Loop() {
					var got int
					if name == "serial" {
						for _, x := range xs {
							got = add(got, x)
						}
					} else {
						got = par.Reduce(xs, 0, add)
					}
					if got != want {
						b.Fatalf("%s = %d, want %d", name, got, want)
					}
				}
				perItem(b, n)
			})
		}
	}
}

// BenchmarkLoadCSV is seed 003's IO-bound experiment at 8 MB (the files
// sit in the page cache after the first load, as in the seed): serial,
// goroutine per file, and par.For over the files with Grain(1). Items are
// bytes.
func BenchmarkLoadCSV(b *testing.B) {
	const total = 8 << 20
	paths, err := seeds.WriteCSV(b.TempDir(), total, 1)
	if err != nil {
		b.Fatal(err)
	}
	want, err := seeds.LoadSerial(paths)
	if err != nil {
		b.Fatal(err)
	}
	records := func(files [][][]string) (n int) {
		for _, f := range files {
			n += len(f)
		}
		return n
	}
	loads := []struct {
		name string
		load func([]string) ([][][]string, error)
	}{
		{"serial", seeds.LoadSerial},
		{"perfile", seeds.LoadPerFile},
		{"par", func(paths []string) ([][][]string, error) {
			rows := make([][][]string, len(paths))
			errs := make([]error, len(paths))
			par.For(len(paths), func(i int) { rows[i], errs[i] = seeds.ReadCSV(paths[i]) }, par.Grain(1))
			for _, err := range errs {
				if err != nil {
					return nil, err
				}
			}
			return rows, nil
		}},
	}
	for _, l := range loads {
		b.Run(l.name, func(b *testing.B) {
			for b.Loop() {
				got, err := l.load(paths)
				if err != nil {
					b.Fatal(err)
				}
				if records(got) != records(want) {
					b.Fatalf("%d records, want %d", records(got), records(want))
				}
			}
			perItem(b, total)
		})
	}
}
