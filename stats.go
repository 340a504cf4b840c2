package sluice

import (
	"math"
	"slices"
	"time"

	"github.com/sluicehq/sluice/internal/hist"
)

// latency is a histogram written by one goroutine and read by snapshots:
// internal/hist's log-linear buckets (16 per power of two of nanoseconds).
type latency struct{ hist.Recorder }

func (l *latency) record(ns int64) { l.Record(uint64(max(ns, 0))) }

// Histogram is a distribution of durations: Counts[i] durations fell at or
// below Bounds[i] and above Bounds[i-1]; the last count has no upper bound
// (its Bound is 0). A pipeline's histograms have 16 buckets per power of two.
type Histogram struct {
	Bounds []time.Duration
	Counts []uint64
	Count  uint64
	Sum    time.Duration
}

// Quantile estimates the q-quantile (0 < q ≤ 1), interpolated inside the
// bucket it falls in: within 1/16 of the true value for a pipeline's
// histograms. It returns 0 if the histogram is empty, and the lower bound
// of the last bucket if it falls there.
func (h Histogram) Quantile(q float64) time.Duration {
	return time.Duration(hist.Quantile(h.Counts, q, func(i int) (lo, hi float64) {
		if i > 0 {
			lo = float64(h.Bounds[i-1] + 1)
		}
		if i >= len(h.Bounds) || h.Bounds[i] == 0 {
			return lo, math.Inf(1)
		}
		return lo, float64(h.Bounds[i])
	}))
}

// latBounds are the Bounds of every pipeline Histogram: each bucket's
// largest value, and 0 for the last.
var latBounds = func() []time.Duration {
	b := make([]time.Duration, hist.Buckets)
	for i := range hist.Buckets - 1 {
		b[i] = time.Duration(hist.Upper(i) - 1)
	}
	return b
}()

func (l *latency) addTo(h *Histogram) {
	var c hist.Counts
	l.AddTo(&c)
	if h.Bounds == nil {
		h.Bounds, h.Counts = slices.Clone(latBounds), make([]uint64, hist.Buckets)
	}
	for i, n := range c.N {
		h.Counts[i] += n
	}
	h.Count += c.Count
	h.Sum += time.Duration(c.Sum)
}

func (e *edge[T]) stats() EdgeStats {
	var sent, recvd int64
	for _, c := range e.sent {
		sent += c.n.Load()
	}
	for _, c := range e.recvd {
		recvd += c.n.Load()
	}
	recvdItems := recvd
	if e.weigh != nil {
		recvdItems = 0
		for _, c := range e.recvdItems {
			recvdItems += c.n.Load()
		}
	}
	dropped := e.dropped.Load()
	limit := e.chunkLimit()
	depth := max(0, sent-recvd-dropped)
	st := EdgeStats{
		From:          e.from.name,
		Sent:          sent,
		Received:      recvd,
		ReceivedItems: recvdItems,
		Dropped:       dropped,
		Depth:         depth,
		Capacity:      max(cap(e.ch)*limit, int(depth)),
		Chunks:        len(e.ch),
		ChunkCap:      cap(e.ch),
		ChunkSize:     limit,
		Policy:        e.policy.String(),
	}
	if to := e.to.Load(); to != nil {
		st.To = to.name
	}
	return st
}

// EdgeStats describes one edge at the moment of a snapshot.
type EdgeStats struct {
	From, To string // producing and consuming stage ("" if not consumed yet)
	// Sent is the items handed to the edge, Received those its consumer
	// took, and Dropped those its overflow policy discarded: Sent is
	// Received + Depth + Dropped.
	Sent, Received, Dropped int64
	// ReceivedItems is the items inside those its consumer took: the
	// items of the batches when the edge is a [Batch]'s output, Received
	// otherwise.
	ReceivedItems int64
	// Depth is the number of items queued in the edge. Items in a chunk
	// that a producer is still filling are not counted yet.
	Depth int64
	// Capacity is the items the edge holds when full at its current chunk
	// size: ChunkCap × ChunkSize, or Depth if more than that (chunks of an
	// earlier, larger size still queued).
	Capacity int
	// Chunks and ChunkCap are the queue's fill in chunks: the edge is full,
	// and its producer blocks, when Chunks == ChunkCap — even if the
	// chunks are partly filled and Depth is well below Capacity.
	Chunks, ChunkCap int
	// ChunkSize is the number of items the producer puts in a chunk now:
	// it adapts to the consumer's cost per item unless set by [Chunk] (see
	// the package documentation).
	ChunkSize int
	Policy    string // overflow policy: block, drop-newest, drop-oldest
}

// StageStats describes one stage at the moment of a snapshot.
type StageStats struct {
	Name string
	Kind string // source, map, ordered-map, filter, flat-map, batch, …: docs/stages.md lists them
	// Workers is the goroutines the stage runs: its fixed count, or with
	// [Auto] the count the engine chooses now (Auto says why).
	Workers int
	Running int // goroutines that have not exited yet (with Auto, a removed worker runs until its chunk's end)
	Waiting int // of those, how many are waiting for input or for room
	// WaitingForRoom is how many of the waiting workers wait for room
	// downstream (a full output edge, a full reorder window, a ToChan
	// receiver) rather than for input: a stage blocked this way is not the
	// bottleneck, its consumer is.
	WaitingForRoom int
	In             int64 // items taken from its input edges
	// Out is the items handed to its output edges (dead letters not
	// counted), Dropped those of them the edges' overflow policy discarded.
	Out, Dropped int64
	// InItems is the items inside what the stage took: for a stage whose
	// input is a [Batch]'s output, the items of the batches (In counts the
	// batches); In otherwise.
	InItems int64
	// Failed is the items whose function failed and that were settled by
	// the stage's error policy: skipped ([SkipErrors]) or dead-lettered
	// ([DeadLetter]). Retries is the calls repeated by [Retry].
	Failed, Retries int64
	// DeadLettered is the failed items handed to the stage's dead-letter
	// stream ([DeadLetter]): a part of Failed. (A connector's dead-letter
	// subject or topic, to which a broker's message goes after its last
	// delivery, is the connector's own count, under another name.)
	DeadLettered int64
	// Busy is the goroutine time spent working — running the stage's
	// function and moving items — summed over its workers.
	Busy time.Duration
	// Blocked is the time spent waiting for input or room, summed over
	// its workers; Throttled the time spent waiting on the stage's
	// [Throttle]. Busy, Blocked and Throttled are cumulative: each
	// worker's are read as of one instant, so none is ever lower than in
	// an earlier snapshot.
	Blocked   time.Duration
	Throttled time.Duration
	// Auto describes the engine's choice of Workers for a stage with
	// [Auto]; nil for a fixed count.
	Auto *AutoStats
	// InDepth and InCapacity describe the stage's input edge (summed
	// when it has several, as Merge does).
	InDepth    int64
	InCapacity int
	// InChunkSize is the number of items its producer now puts in a chunk
	// of the stage's input (the largest, when it has several inputs): it
	// adapts to the stage's cost per item (see the package documentation).
	InChunkSize int
	// Latency is sampled per chunk (one in eight): the time from a chunk's
	// hand-off to the stage's input edge until the stage has finished with
	// it — queueing plus processing. Sources have none.
	Latency Histogram
	// Keys is the keys a [Keyed] or [Window] stage holds state for now.
	Keys int64
	// Window describes a [Window] stage's event time and windows; nil for
	// every other stage.
	Window *WindowStats
	// Connector is the counts of the broker connector the stage reads
	// from or writes to, as the connector's Stats method returns them
	// (kafkax.SourceStats, natsx.SinkStats, …): see
	// [Pipeline.AttachConnector]. Nil for a stage without one. A connector
	// that several stages share reports its totals under the first.
	Connector any
}

// Snapshot is a consistent-enough picture of a running pipeline: each
// counter is read atomically, but not all at the same instant.
type Snapshot struct {
	Pipeline string
	Taken    time.Time
	Elapsed  time.Duration // since New, until Wait returned once done
	Done     bool          // Wait has returned
	Err      string        // the pipeline's error, once Wait has returned
	Stages   []StageStats
	Edges    []EdgeStats
}

// Stage returns the stats of the stage named name, and whether the
// snapshot has one.
func (s Snapshot) Stage(name string) (StageStats, bool) {
	for _, st := range s.Stages {
		if st.Name == name {
			return st, true
		}
	}
	return StageStats{}, false
}

// Stats returns a snapshot of every stage and edge. It is safe to call at
// any time from any goroutine, while the pipeline runs and after. It costs
// a few atomic loads per worker and edge and takes no lock a stage holds.
func (p *Pipeline) Stats() Snapshot {
	p.mustBeMade("Stats")
	// The graph (stages, their edges, the edges' counters) grows while the
	// pipeline is built; p.mu keeps a snapshot from reading it half-made.
	// Stages never take p.mu while running.
	p.mu.Lock()
	defer p.mu.Unlock()
	stages, edges := p.stages, p.edges

	now := time.Now()
	snap := Snapshot{Pipeline: p.name, Taken: now, Elapsed: now.Sub(p.start)}
	select {
	case <-p.waited:
		snap.Done = true
		snap.Elapsed = p.finished.Sub(p.start)
		if p.waitErr != nil {
			snap.Err = p.waitErr.Error()
		}
	default:
	}
	edgeStats := make(map[edgeInfo]EdgeStats, len(edges))
	for _, e := range edges {
		st := e.stats()
		edgeStats[e] = st
		snap.Edges = append(snap.Edges, st)
	}
	for _, s := range stages {
		snap.Stages = append(snap.Stages, s.stats(edgeStats))
	}
	return snap
}

// stats is the stage's part of a snapshot, its edges' figures read from
// edgeStats. Called with p.mu held.
func (s *stage) stats(edgeStats map[edgeInfo]EdgeStats) StageStats {
	st := StageStats{Name: s.name, Kind: s.kind.String(), Workers: len(s.workers)}
	if s.auto != nil {
		st.Workers = int(s.auto.target.Load())
		s.auto.mu.Lock()
		a := s.auto.stats
		s.auto.mu.Unlock()
		st.Auto = &a
	}
	var blocked, throttled, life int64
	for _, w := range s.workers {
		if w == nil {
			continue // an Auto slot never used
		}
		b, th, l, waiting := w.times()
		blocked += b
		throttled += th
		life += l
		if waiting {
			st.Waiting++
			if w.forRoom.Load() {
				st.WaitingForRoom++
			}
		}
		st.Failed += w.failed.Load()
		st.Retries += w.retries.Load()
		w.lat.addTo(&st.Latency)
		if w.live.Load() {
			st.Running++
		}
	}
	st.Blocked = time.Duration(blocked)
	st.Throttled = time.Duration(throttled)
	st.Busy = time.Duration(max(0, life-blocked-throttled))
	for _, e := range s.ins {
		es := edgeStats[e]
		st.In += es.Received
		st.InItems += es.ReceivedItems
		st.InDepth += es.Depth
		st.InCapacity += es.Capacity
		st.InChunkSize = max(st.InChunkSize, es.ChunkSize)
	}
	for _, e := range s.outs {
		es := edgeStats[e]
		if e.deadLetter() {
			st.DeadLettered += es.Sent
			continue
		}
		st.Out += es.Sent
		st.Dropped += es.Dropped
	}
	for _, f := range s.extra {
		f(&st)
	}
	if s.connStats != nil {
		st.Connector = s.connStats()
	}
	return st
}
