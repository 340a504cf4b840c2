package chans_test

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/chans"
	"github.com/sluicehq/sluice/internal/seeds"
)

type mergeFunc func(...<-chan int) <-chan int

// mergeVariant is a merge under test; max is the largest source count it is
// run at (0: no limit), maxSustained the same for the sustained runs.
type mergeVariant struct {
	name              string
	merge             mergeFunc
	max, maxSustained int
}

// reflect.Select allocates per input on every call (seed 000 measured 1.2 s
// per round at 1000 sources), so MergeReflect is skipped above 1000 sources
// and, in the sustained runs, above 100.
var mergeVariants = []mergeVariant{
	{"Merge", chans.Merge[int], 0, 0},
	{"SeedCanonical", seeds.MergeCanonical[int], 0, 0},
	{"SeedReflect", seeds.MergeReflect[int], 1000, 100},
	{"SeedBatch", seeds.MergeBatch[int], 0, 0},
	{"SeedLoop", seeds.MergeLoop[int], 0, 0},
}

// faninRig is one merge wired to the seed harness's sources.
type faninRig struct {
	w     []chan<- int
	out   <-chan int
	count int
	want  int
}

func newFaninRig(merge mergeFunc, sources, perSource int) *faninRig {
	count := sources * perSource
	w, r := seeds.FaninSources(sources)
	return &faninRig{w, merge(r...), count, seeds.FaninSum(sources, count)}
}

// round is one iteration of seed 000's benchmark: send count messages
// spread over the sources, one goroutine per source, and read them back. It
// reports whether the sum matched.
func (r *faninRig) round() bool {
	wg := seeds.FaninSend(r.w, r.count)
	got := seeds.FaninRead(r.out, r.count)
	wg.Wait()
	return got == r.want
}

// close closes the sources and waits for the merge to close its output.
func (r *faninRig) close() {
	seeds.FaninClose(r.w)
	for range r.out {
	}
}

// benchFanin runs seed 000's benchmark for each variant as a sub-benchmark.
// The sources and the merge are set up once per sub-benchmark, as in the
// seed; "SharedChan" is the plain-channel baseline: every sender writes
// straight into one channel buffered to the source count, no merge at all.
func benchFanin(b *testing.B, sources, perSource int, sustained bool) {
	for _, v := range mergeVariants {
		limit := v.max
		if sustained {
			limit = v.maxSustained
		}
		if limit > 0 && sources > limit {
			continue
		}
		b.Run(v.name, func(b *testing.B) {
			r := newFaninRig(v.merge, sources, perSource)
			defer r.close()
			done := perItem(b, r.count)
			for b.Loop() {
				if !r.round() {
					b.Fatalf("sum of merged values is wrong: lost or duplicated")
				}
			}
			done()
		})
	}
	b.Run("SharedChan", func(b *testing.B) {
		shared := func(ins ...<-chan int) <-chan int { return nil }
		r := newFaninRig(shared, sources, perSource)
		ch := make(chan int, sources)
		for i := range r.w {
			r.w[i] = ch
		}
		r.out = ch
		done := perItem(b, r.count)
		for b.Loop() {
			if !r.round() {
				b.Fatalf("sum of received values is wrong")
			}
		}
		done()
	})
}

var faninSources = []int{runtime.NumCPU(), 100, 1000, 10000}

// BenchmarkFanin is seed 000's benchmark: 10 messages per source.
func BenchmarkFanin(b *testing.B) {
	for _, n := range faninSources {
		b.Run(fmt.Sprintf("sources=%d", n), func(b *testing.B) { benchFanin(b, n, 10, false) })
	}
}

// BenchmarkFaninSustained sends 1000 messages per source per round.
func BenchmarkFaninSustained(b *testing.B) {
	for _, n := range faninSources[:3] {
		b.Run(fmt.Sprintf("sources=%d", n), func(b *testing.B) { benchFanin(b, n, 1000, true) })
	}
}

// versusItems is about how many items one timed sample moves.
const versusItems = 100_000

// BenchmarkFaninVersus measures the ratios the targets are stated in, with
// the variants interleaved round by round so that a change in the machine's
// load hits them all alike. Each b.Loop iteration sets up every variant in
// turn (SeedLoop spins on a CPU while its sources are open, so none is left
// running during another's rounds), times about versusItems items' worth of
// rounds, and tears it down. SeedReflect is left out above 2000 messages a
// round (a second or more per sample, and never the best). It reports the median ns/item of each variant and
// "x-best-seed": the best seed variant's median over Merge's.
func BenchmarkFaninVersus(b *testing.B) {
	for _, per := range []int{10, 1000} {
		for _, n := range faninSources {
			if per == 1000 && n > 1000 {
				continue
			}
			b.Run(fmt.Sprintf("per=%d/sources=%d", per, n), func(b *testing.B) {
				samples := make([][]float64, len(mergeVariants))
				for b.Loop() {
					for i, v := range mergeVariants {
						if v.name == "SeedReflect" && n*per > 2000 {
							continue
						}
						r := newFaninRig(v.merge, n, per)
						r.round() // warm up: goroutines started, stacks grown
						rounds := max(1, versusItems/r.count)
						ok := true
						start := time.Now()
						for range rounds {
							ok = r.round() && ok
						}
						samples[i] = append(samples[i], float64(time.Since(start).Nanoseconds())/float64(rounds*r.count))
						r.close()
						if !ok {
							b.Fatalf("%s: sum of merged values is wrong", v.name)
						}
					}
				}
				best := 0.0
				for i, v := range mergeVariants {
					if len(samples[i]) == 0 {
						continue
					}
					m := median(samples[i])
					b.ReportMetric(m, v.name+"-ns/item")
					if i > 0 && (best == 0 || m < best) {
						best = m
					}
				}
				b.ReportMetric(best/median(samples[0]), "x-best-seed")
				b.ReportMetric(median(samples[1])/median(samples[0]), "x-canonical")
			})
		}
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
