package sluice

import (
	"fmt"
	"strings"
)

// Which stage options fit which stages, in one table. Each option
// declares where it fits (one of the fits below) and how the user
// wrote it ("Reorder(8)"); a stage says what kind it is (stageKind);
// stageOptions applies the options and panics on one that does not fit,
// naming the stage, the option and where it fits.

// stageKind is one kind of stage that takes options, as a bit of a set.
type stageKind uint16

const (
	kindSource stageKind = 1 << iota // From, FromSlice, FromChan, FromSeq
	kindMap
	kindOrderedMap
	kindFilter
	kindFlatMap
	kindForEach
	kindForEachChunk
	kindBatch
	kindUnbatch
	kindPartition
	kindBroadcast
	kindMerge
	kindKeyed
	kindWindow
	kindCount // the number of kinds, as a bit: not a kind
)

// kindNames are the kinds as a stage's misuse message names it (the
// label before the stage's name) and as a list of where an option fits.
var kindNames = map[stageKind]string{
	kindSource: "source", kindMap: "Map", kindOrderedMap: "OrderedMap", kindFilter: "Filter",
	kindFlatMap: "FlatMap", kindForEach: "ForEach", kindForEachChunk: "ForEachChunk",
	kindBatch: "Batch", kindUnbatch: "Unbatch", kindPartition: "Partition",
	kindBroadcast: "Broadcast", kindMerge: "Merge", kindKeyed: "Keyed", kindWindow: "Window",
}

func (k stageKind) String() string { return kindNames[k] }

// The sets of kinds that options fit.
const (
	// withFunction: the stages that call a function that returns an
	// error, through a call chain (chain.go).
	withFunction = kindMap | kindOrderedMap | kindFilter | kindFlatMap | kindForEach | kindForEachChunk
	// withPool: the stages with a pool of workers.
	withPool = withFunction
	// withOutput: the stages that write an output edge of their own.
	withOutput = kindSource | kindMap | kindOrderedMap | kindFilter | kindFlatMap |
		kindBatch | kindUnbatch | kindPartition | kindBroadcast | kindMerge | kindKeyed | kindWindow
)

// optionFit is where an option fits: the kinds of stage, what they are
// called as a group (empty: the list of kinds says it), and a hint for a
// sink given it.
type optionFit struct {
	fits  stageKind
	group string
	sink  string
}

// The table: every option declares one of these as where it fits.
var (
	fitsOutput    = optionFit{withOutput, "stages with an output edge", edgeHint}               // Buffer, Chunk, OnFull
	fitsFunction  = optionFit{withFunction, "stages with a function that returns an error", ""} // the call chain's: SkipErrors, DeadLetter, Retry, Timeout, Throttle
	fitsPool      = optionFit{withPool, "stages with a pool of workers", ""}                    // Auto
	fitsOrdered   = optionFit{kindOrderedMap, "", ""}                                           // Reorder
	fitsChunkSink = optionFit{kindForEachChunk, "", ""}                                         // Gather
)

const edgeHint = "; a sink has none: give it to the stage that feeds this one"

// stageOption is every StageOption: where it fits, how the user wrote it,
// and what it sets.
type stageOption struct {
	fit  optionFit
	show string // "Reorder(8)"
	set  func(c *stageConfig)
	bad  string // what is wrong with the option's arguments; "" when nothing
}

func (o stageOption) applyStage(c *stageConfig) { o.set(c) }

// option returns a StageOption that fits where fit says, shown in
// messages as show, and sets what set sets.
func option(fit optionFit, show string, set func(c *stageConfig)) StageOption {
	return stageOption{fit: fit, show: show, set: set}
}

// invalid returns a StageOption whose arguments are wrong, as problem
// says ("Buffer must be ≥ 1, got 0"): the stage given it panics, naming
// itself and the problem. The panic waits for the stage, rather than
// coming from the option's constructor, so that it names the stage and
// so that the stages built before are stopped (see guard).
func invalid(fit optionFit, show, problem string) StageOption {
	return stageOption{fit: fit, show: show, bad: problem}
}

// stageOptions applies the options given to stage name of kind k, in
// order (a later option of a kind overrides an earlier one). It panics on
// a nil option, or one that does not fit k.
func stageOptions(k stageKind, name string, opts []StageOption) stageConfig {
	var c stageConfig
	for i, o := range opts {
		if o == nil {
			panic(fmt.Sprintf("sluice: %s %q: StageOption %d is nil", k, name, i))
		}
		so := o.(stageOption)
		if so.bad != "" {
			panic(fmt.Sprintf("sluice: %s %q: %s", k, name, so.bad))
		}
		if fit := so.fit; fit.fits&k == 0 {
			panic(fmt.Sprintf("sluice: %s %q: %s applies only to %s%s", k, name, so.show, fit.where(), fit.hint(k)))
		}
		so.set(&c)
	}
	return c
}

// where says where an option fits: its group and the kinds in it, or the
// kinds alone ("OrderedMap").
func (f optionFit) where() string {
	var names []string
	for k := stageKind(1); k < kindCount; k <<= 1 {
		if f.fits&k != 0 {
			names = append(names, k.String())
		}
	}
	list := strings.Join(names, ", ")
	if f.group == "" {
		return list
	}
	return f.group + " (" + list + ")"
}

// hint is what the message adds for a stage of kind k: where to give an
// output's option instead, for a sink.
func (f optionFit) hint(k stageKind) string {
	if k&(kindForEach|kindForEachChunk) == 0 {
		return ""
	}
	return f.sink
}
