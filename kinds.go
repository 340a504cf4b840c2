package sluice

import "math/bits"

//go:generate go test -run ^TestStagesPageIsCurrent$ . -args -update

// The kinds of stage, described once: each kind's constructors, the name
// that Stats and tracers report (StageStats.Kind, Call.Kind), the label a
// misuse message gives it, what it does, and what it has — a function
// called through a chain, a pool of workers, an output edge of its own —
// from which options_table.go derives where each option fits.
// docs/stages.md is generated from this table and the options' catalogue
// (go generate; TestStagesPageIsCurrent fails when they disagree).

// stageKind is one kind of stage, as a bit of a set: an option fits a set
// of kinds.
type stageKind uint32

const (
	kindSource stageKind = 1 << iota
	kindMap
	kindOrderedMap
	kindFilter
	kindFlatMap
	kindBatch
	kindUnbatch
	kindMerge
	kindPartition
	kindBroadcast
	kindKeyed
	kindWindow
	kindForEach
	kindForEachChunk
	kindReduce
	kindCollect
	kindToChan
	kindToSeq
	kindCount // the number of kinds, as a bit: not a kind
)

// kindInfo describes one kind of stage.
type kindInfo struct {
	kind  stageKind
	name  string   // as StageStats.Kind and Call.Kind report it
	label string   // as a misuse message names the stage, before its name
	funcs []string // the functions that start one
	does  string   // what it does, one sentence for the catalogue
	// What it has, from which the options that fit it follow.
	function bool // a function that may return an error, called through a chain
	pool     bool // a pool of workers (n, or Auto's bounds)
	output   bool // an output edge it writes itself
}

// kindTable holds every kind, in the order of their bits.
var kindTable = [...]kindInfo{
	{kindSource, "source", "source", []string{"From", "FromSlice", "FromChan", "FromSeq", "FromSeq2"},
		"Starts a stream: from a generator given an Emitter, a slice, a channel or an iterator.", false, false, true},
	{kindMap, "map", "Map", []string{"Map"},
		"Calls f on each item with n workers and sends its results, in no set order.", true, true, true},
	{kindOrderedMap, "ordered-map", "OrderedMap", []string{"OrderedMap"},
		"Calls f on each item with n workers and sends its results in input order.", true, true, true},
	{kindFilter, "filter", "Filter", []string{"Filter"},
		"Keeps the items for which f returns true, with n workers.", true, true, true},
	{kindFlatMap, "flat-map", "FlatMap", []string{"FlatMap"},
		"Calls f on each item with n workers and sends every value it emits.", true, true, true},
	{kindBatch, "batch", "Batch", []string{"Batch"},
		"Groups items into slices of up to size items, sending a partial one after maxWait.", false, false, true},
	{kindUnbatch, "unbatch", "Unbatch", []string{"Unbatch"},
		"Sends each item of each slice it receives.", false, false, true},
	{kindMerge, "merge", "Merge", []string{"Merge"},
		"Joins several streams of one type into one, in no set order.", false, false, true},
	{kindPartition, "partition", "Partition", []string{"Partition"},
		"Splits a stream into n by a key: items with the same key go to the same stream.", false, false, true},
	{kindBroadcast, "broadcast", "Broadcast", []string{"Broadcast"},
		"Sends every item to each of n streams.", false, false, true},
	{kindKeyed, "keyed", "Keyed", []string{"Keyed"},
		"Calls a function with each item, its key and that key's state, owned by one of n workers, and sends what it emits.", false, false, true},
	{kindWindow, "window", "Window", []string{"Window"},
		"Folds items into windows of event time (tumbling, hopping, sessions) per key and sends a pane when the watermark passes a window's end.", false, false, true},
	{kindForEach, "for-each", "ForEach", []string{"ForEach"},
		"Calls f on each item with n workers: the sink that stores or sends.", true, true, false},
	{kindForEachChunk, "for-each-chunk", "ForEachChunk", []string{"ForEachChunk"},
		"Calls f on a chunk of items at a time with n workers, with Gather on every item waiting: the sink of bulk writes.", true, true, false},
	{kindReduce, "reduce", "Reduce", []string{"Reduce"},
		"Folds the items, in order, into one value (a Result).", false, false, false},
	{kindCollect, "collect", "Collect", []string{"Collect"},
		"Gathers the items, in order, into a slice (a Result).", false, false, false},
	{kindToChan, "to-chan", "ToChan", []string{"ToChan"},
		"Sends the items on a buffered channel (ToChanBuffer), closed at the end.", false, false, false},
	{kindToSeq, "to-seq", "ToSeq", []string{"ToSeq"},
		"Yields the items, in order, to one range loop; Wait gives the error after it.", false, false, false},
}

func (k stageKind) info() *kindInfo { return &kindTable[bits.TrailingZeros32(uint32(k))] }

// String is the kind as StageStats.Kind and Call.Kind report it ("map").
func (k stageKind) String() string { return k.info().name }

// label is the kind as a misuse message names a stage of it ("Map").
func (k stageKind) label() string { return k.info().label }

// kindsWith returns the set of kinds that have what has says.
func kindsWith(has func(*kindInfo) bool) stageKind {
	var set stageKind
	for i := range kindTable {
		if has(&kindTable[i]) {
			set |= kindTable[i].kind
		}
	}
	return set
}
