package sluice

import (
	"fmt"
	"log/slog"
	"time"
)

// Option configures a [Pipeline].
type Option interface{ apply(*config) }

type config struct {
	name   string
	grace  time.Duration // DrainGrace; DefaultDrainGrace unless set
	tracer Tracer        // Tracing; nil: no spans
	logger *slog.Logger  // Logger; nil: no logs
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Named sets the pipeline's name, as shown in [Snapshot]s, on the dashboard,
// in Prometheus labels and in error and panic messages. An empty name
// keeps the default (see [Pipeline.Name]).
func Named(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

// DefaultDrainGrace is how long a drain lets [Retry] backoffs run unless
// [DrainGrace] says otherwise. It is a fraction of the grace periods that
// orchestrators commonly give a process between SIGTERM and SIGKILL (ten
// seconds for docker stop, thirty for Kubernetes): after it, the drain
// still has to carry the settled items through the rest of the pipeline,
// and calls already running must return.
const DefaultDrainGrace = 5 * time.Second

// DrainGrace bounds how long a drain ([Pipeline.Drain], [Pipeline.DrainOn])
// waits for retries: from the moment the drain begins, a stage with
// [Retry] goes on retrying for d at most. Then a backoff still waiting
// ends at once, no failed call is retried again, and the item is settled
// by the stage's policy with its last error, as if its attempts had run
// out: dead-lettered with [DeadLetter], dropped and counted with
// [SkipErrors], and otherwise failing the pipeline, so that Wait returns
// a [*StageError] naming the stage and wrapping that error (items still in
// flight are then abandoned, as at any failure). A call already running is
// not interrupted: give the stage a [Timeout] to bound it. DrainGrace(0)
// ends retries as soon as a drain begins. The default is
// [DefaultDrainGrace]. Panics if d < 0.
func DrainGrace(d time.Duration) Option {
	if d < 0 {
		panic(fmt.Sprintf("sluice: DrainGrace must be ≥ 0, got %v", d))
	}
	return optionFunc(func(c *config) { c.grace = d })
}

// Logger makes the pipeline log what an operator needs to know to l, with
// the pipeline's name (attribute "pipeline") and, where one is concerned,
// the stage's ("stage"):
//
//	level  message                 when
//	Error  "pipeline failed"       the first error or panic stopped the pipeline ("error")
//	Info   "pipeline cancelled"    the parent context was cancelled ("cause")
//	Warn   "items failed"          items settled by a stage's error policy, dead-lettered or
//	                               skipped after their last attempt ("failed": how many
//	                               since the stage's last such line, "error": the latest,
//	                               "attempts": its calls)
//	Info   "drain begun"           Drain or DrainOn: sources stop taking input ("grace")
//	Warn   "drain grace over"      a drain's DrainGrace passed while a retry waited: its
//	                               item is settled with its last error
//	Info   "workers changed"       Auto changed a stage's worker count ("from", "to",
//	                               "reason", "why"); at Debug for a probe
//	Info   "pipeline finished"     Wait returned ("elapsed", "error" if any, and "stages": a
//	                               group per stage with its totals — "in", "in_items" after a
//	                               Batch, "out", and "failed", "dead_lettered", "dropped",
//	                               "retries" where not 0)
//
// Durations are written as text ("grace":"5s", see [LogDuration]).
// Nothing is logged per item: a stage logs at most one "items failed"
// line per [LogInterval] (the first at once) and a last one when the
// pipeline ends, for what is left, however many items fail. A nil l means
// no logs, the default: a library logs nothing unless asked.
func Logger(l *slog.Logger) Option { return optionFunc(func(c *config) { c.logger = l }) }

// Tracing makes the pipeline start a span with t around each call of a
// stage's function, and at its sources one per item whose message brought
// no trace, so that every span on an item and on what it becomes is in
// one trace (see [Tracer]). A nil t means no tracing, the default, which
// costs nothing per item but a nil check where a stage hands items on.
func Tracing(t Tracer) Option { return optionFunc(func(c *config) { c.tracer = t }) }

// StageOption configures one stage. The options, and the stages each fits:
//
//   - the edge a stage writes to: [Buffer], [Chunk], [OnFull] — every
//     stage with an output (sources, [Map], [OrderedMap], [Filter],
//     [FlatMap], [Batch], [Unbatch], [Partition], [Broadcast], [Merge],
//     [Keyed], [Window]);
//   - OrderedMap's [Reorder] bound; ForEachChunk's [Gather];
//   - the call chain around each call of a stage's function — [Throttle],
//     [Timeout], [Retry], and what happens to an item whose call failed,
//     [SkipErrors] or [DeadLetter] — and the engine's choice of the
//     worker count, [Auto]: the stages with a function that returns an
//     error ([Map], [OrderedMap], [Filter], [FlatMap], [ForEach],
//     [ForEachChunk]).
//
// A stage panics when given an option that does not fit it, naming the
// stage, the option and the stages it fits.
type StageOption interface{ applyStage(*stageConfig) }

type stageConfig struct {
	buffer     int      // items the output edge holds, beyond chunks being filled or processed; 0: defaultChunks chunks
	chunk      int      // items per chunk; 0: chosen from the element size
	overflow   Overflow // what a send does when the output edge is full
	slots      int      // chunks the output edge holds when buffer is not set; 0: defaultChunks
	reorder    int      // OrderedMap's reorder bound, in items
	setReorder bool
	calls      callConfig // the call chain's settings (chain.go)
	autoMin    int        // Auto's bounds; autoMax 0: a fixed worker count
	autoMax    int
	gather     int // ForEachChunk's Gather: most items per call; 0: a chunk per call
}

// DefaultBuffer is the number of items an edge of small elements holds
// unless [Buffer] says otherwise: 8 chunks of [DefaultChunk]. An edge of
// larger elements holds 8 of its smaller chunks, about 128 KiB. An edge
// into a [ForEachChunk] with [Gather](n) holds at least n items.
const DefaultBuffer = 8 * DefaultChunk

// DefaultChunk is the largest number of items moved between goroutines in
// one chunk unless [Chunk] says otherwise. Chunks of large elements are
// smaller, so that one chunk stays near 16 KiB, but never fewer than 16
// items (a chunk of elements over 1 KiB is larger). Below that ceiling the size
// adapts to the consuming stage (see the package documentation): cheap
// items travel in full chunks, slow ones in chunks of a few items or one.
const DefaultChunk = 2048

// defaultChunks is how many chunks an edge holds unless [Buffer] is given.
const defaultChunks = 8

// Buffer sets how many items the stage's output edge holds when its chunks
// are full (default: 8 chunks, [DefaultBuffer] small items). The edge is a
// queue of chunks; a buffer smaller than the chunk size makes chunks that
// small, so Buffer(1) moves items one at a time, as an unbuffered-like
// channel would. While chunks are smaller than full (see the package
// documentation) the edge holds fewer items. A stage given
// Buffer(n) with n < 1, or one that needs more than 2^20 chunk slots,
// panics.
func Buffer(n int) StageOption {
	if n < 1 {
		return invalid(fitsOutput, "Buffer", fmt.Sprintf("Buffer must be ≥ 1, got %d", n))
	}
	return option(fitsOutput, fmt.Sprintf("Buffer(%d)", n), func(c *stageConfig) { c.buffer = n })
}

// Chunk sets the most items moved between goroutines at once on the stage's
// output edge, and turns off the adaptive sizing described in the package
// documentation: every chunk is filled to n items unless its producer would
// otherwise wait. Larger chunks cost less per item and add latency only
// under load. A stage given Chunk(n) with n < 1 or n > 2^20 panics, and a sink
// ([ForEach], [ForEachChunk]), which has no output edge, panics when given
// Chunk, Buffer or OnFull: they belong to the stage that feeds it.
func Chunk(n int) StageOption {
	if n < 1 {
		return invalid(fitsOutput, "Chunk", fmt.Sprintf("Chunk must be ≥ 1, got %d", n))
	}
	return option(fitsOutput, fmt.Sprintf("Chunk(%d)", n), func(c *stageConfig) { c.chunk = n })
}

// Overflow says what a stage does when its output edge is full.
type Overflow int

const (
	// Block waits for room: backpressure travels upstream. The default.
	Block Overflow = iota
	// DropNewest discards the chunk being sent when the edge is full, and
	// counts its items as dropped.
	DropNewest
	// DropOldest discards the oldest chunk in the edge to make room, and
	// counts its items as dropped.
	DropOldest
)

func (o Overflow) String() string {
	switch o {
	case Block:
		return "block"
	case DropNewest:
		return "drop-newest"
	case DropOldest:
		return "drop-oldest"
	}
	return fmt.Sprintf("Overflow(%d)", int(o))
}

// OnFull sets the stage's overflow policy. Drops happen a chunk at a time:
// under [DropNewest] the items the stage collected since its last send, under
// [DropOldest] the oldest chunk waiting in the edge. A discarded item's
// receipts are acknowledged (see [Receipt]): the policy decided it is
// done. A stage given an unknown policy panics.
func OnFull(o Overflow) StageOption {
	if o < Block || o > DropOldest {
		return invalid(fitsOutput, "OnFull", fmt.Sprintf("OnFull: unknown overflow policy %d", int(o)))
	}
	return option(fitsOutput, fmt.Sprintf("OnFull(%v)", o), func(c *stageConfig) { c.overflow = o })
}

// Reorder bounds how many items [OrderedMap] holds between taking them and
// handing their results on, waiting for earlier items to finish (default:
// four full chunks per worker). One chunk may pass the bound: the chunk
// that is next to leave always goes on. OrderedMap panics if n < 1; any stage other
// than OrderedMap panics when given it.
func Reorder(n int) StageOption {
	if n < 1 {
		return invalid(fitsOrdered, "Reorder", fmt.Sprintf("Reorder must be ≥ 1, got %d", n))
	}
	return option(fitsOrdered, fmt.Sprintf("Reorder(%d)", n), func(c *stageConfig) { c.reorder, c.setReorder = n, true })
}
