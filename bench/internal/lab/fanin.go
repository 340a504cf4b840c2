package lab

import (
	"fmt"
	"runtime"

	"github.com/destel/rill"
	"github.com/eapache/channels"
	"github.com/samber/lo"

	"github.com/sluicehq/sluice/chans"
	"github.com/sluicehq/sluice/internal/seeds"
)

// Seed 000: merging N channels into one, with the seed's harness
// (internal/seeds: sources buffered 5, one sending goroutine per source per
// round, one reader). A round sends and reads sources × perSource messages.

// merged is a running merge under test: read takes count values off its
// output and returns their sum; rest drains the output after the sources
// are closed and returns how many values were still there (0 when nothing
// was duplicated).
type merged struct {
	read func(count int) int
	rest func() int
}

func typedMerge(out <-chan int) merged {
	return merged{
		read: func(count int) int { return seeds.FaninRead(out, count) },
		rest: func() int {
			n := 0
			for range out {
				n++
			}
			return n
		},
	}
}

type mergeVariant struct {
	name     string
	baseline bool
	// quadratic variants pay per message for every source (reflect.Select
	// builds all its cases on every call), so a round costs about
	// weight × sources² × perSource: they run only where that stays below
	// quadraticBound. eapache's weighs 4: it measured ~3.5× reflect's cost.
	quadratic int
	start     func(ins []<-chan int) merged
}

// quadraticBound is the largest weight × sources² × perSource a quadratic
// variant runs at: a round of a few seconds at full size (reflect.Select
// at the seed's 1000 sources × 10).
func quadraticBound(m Mode) int { return pick(m, 20_000_000, 2_000_000, 500_000) }

func mergeVariants() []mergeVariant {
	return []mergeVariant{
		{name: "goroutine per input (seed canonical)", baseline: true,
			start: func(ins []<-chan int) merged { return typedMerge(seeds.MergeCanonical(ins...)) }},
		{name: "reflect.Select (seed)", quadratic: 1,
			start: func(ins []<-chan int) merged { return typedMerge(seeds.MergeReflect(ins...)) }},
		{name: "select over groups of 4 (seed)",
			start: func(ins []<-chan int) merged { return typedMerge(seeds.MergeBatch(ins...)) }},
		{name: "polling loop (seed)",
			start: func(ins []<-chan int) merged { return typedMerge(seeds.MergeLoop(ins...)) }},
		{name: "sluice chans.Merge",
			start: func(ins []<-chan int) merged { return typedMerge(chans.Merge(ins...)) }},
		{name: "rill.Merge",
			start: func(ins []<-chan int) merged { return typedMerge(rill.Merge(ins...)) }},
		{name: "lo.FanIn (out buffered N)",
			start: func(ins []<-chan int) merged { return typedMerge(lo.FanIn(len(ins), ins...)) }},
		{name: "eapache Multiplex (Wrap per input)", quadratic: 4, start: eapacheMultiplex},
	}
}

// eapacheMultiplex merges with eapache/channels: its inputs are
// interface{} channels, so each typed source is adapted with channels.Wrap
// (a goroutine per input, as its docs say), and Multiplex waits on all of
// them with reflect.Select. The output is buffered to the source count like
// the seed's reflect variant; values arrive as interface{}.
func eapacheMultiplex(ins []<-chan int) merged {
	wrapped := make([]channels.SimpleOutChannel, len(ins))
	for i, in := range ins {
		wrapped[i] = channels.Wrap(in)
	}
	out := channels.NewNativeChannel(channels.BufferCap(len(ins)))
	channels.Multiplex(out, wrapped...)
	return merged{
		read: func(count int) int {
			sum := 0
			for range count {
				sum += (<-out).(int)
			}
			return sum
		},
		rest: func() int {
			n := 0
			for range out {
				n++
			}
			return n
		},
	}
}

func faninExperiment() *Experiment {
	return &Experiment{
		Name: "fanin", Seed: "000", Unit: "message",
		Title:  "fan-in: merging N channels into one (seed 000's harness: sources buffered 5, a sender per source per round)",
		Lines:  true,
		XLabel: "sources",
		Cases: func(c *Config) []Case {
			burst := c.sizes(pick(c.Mode, []int{runtime.NumCPU(), 100, 1000, 10000}, []int{runtime.NumCPU(), 100, 1000}, []int{2, 9, 100}))
			sustained := c.sizes(pick(c.Mode, []int{runtime.NumCPU(), 100, 1000}, []int{runtime.NumCPU(), 100}, []int{3}))
			perSustained := pick(c.Mode, 1000, 1000, 50)
			var cases []Case
			for _, n := range burst {
				cases = append(cases, faninCases(c, "10 per source", n, 10)...)
			}
			for _, n := range sustained {
				cases = append(cases, faninCases(c, fmt.Sprintf("%d per source", perSustained), n, perSustained)...)
			}
			return cases
		},
	}
}

func faninCases(c *Config, series string, sources, perSource int) []Case {
	group := fmt.Sprintf("%d sources × %d", sources, perSource)
	var cases []Case
	for _, v := range mergeVariants() {
		cs := Case{
			Group: group, Series: series, X: float64(sources), Variant: v.name, Baseline: v.baseline,
			Items: sources * perSource,
		}
		if v.quadratic*sources*sources*perSource > quadraticBound(c.Mode) {
			cs.Skip = fmt.Sprintf("too large for %s mode: reflect.Select rebuilds every case on every call, "+
				"so a round costs ~sources² × messages", c.Mode)
		}
		cs.Setup = func() (*Instance, error) { return faninSetup(v, sources, perSource), nil }
		cases = append(cases, cs)
	}
	return cases
}

// faninSetup starts the merge over fresh sources; every round sends and
// reads count messages and checks their sum; Close closes the sources and
// checks that the output then closes with nothing left in it.
func faninSetup(v mergeVariant, sources, perSource int) *Instance {
	count := sources * perSource
	want := seeds.FaninSum(sources, count)
	w, r := seeds.FaninSources(sources)
	m := v.start(r)
	return &Instance{
		Round: func(Metrics) error {
			wg := seeds.FaninSend(w, count)
			got := m.read(count)
			wg.Wait()
			if got != want {
				return fmt.Errorf("sum of %d merged values = %d, want %d (lost or duplicated)", count, got, want)
			}
			return nil
		},
		Close: func() error {
			seeds.FaninClose(w)
			if extra := m.rest(); extra != 0 {
				return fmt.Errorf("%d values left on the output after every round was read (duplicated)", extra)
			}
			return nil
		},
	}
}
