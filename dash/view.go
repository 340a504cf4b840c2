package dash

import (
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// View is what the page shows and what /snapshot.json and each /events
// message carry. Its JSON field names are stable: scripts may rely on them.
// Durations are in seconds; rates are per second, over the last second or
// so (over the whole run until the pipeline is a second old).
type View struct {
	Taken     time.Time      `json:"taken"`
	Rule      string         `json:"bottleneck_rule"`
	Pipelines []PipelineView `json:"pipelines"`
	// Events are the last records of the board's [EventLog], oldest
	// first; absent when it shows none (see [Board.ShowEvents]).
	Events []Event `json:"events,omitempty"`
}

// PipelineView is one pipeline at one reading.
type PipelineView struct {
	ID             int     `json:"id"` // unique on its board, in the order pipelines were added
	Name           string  `json:"name"`
	Done           bool    `json:"done"`  // Wait has returned
	Error          string  `json:"error"` // Wait's error, once done; "" if none
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	WindowSeconds  float64 `json:"window_seconds"` // what the rates are computed over
	// Bottleneck is the name of the stage that [Bottleneck] picks, or "".
	Bottleneck string `json:"bottleneck"`
	// HistoryFromSecond is the second of elapsed time that the first point
	// of every stage's history ends at; each later point is one second on.
	HistoryFromSecond int64       `json:"history_from_second"`
	Stages            []StageView `json:"stages"`
	Edges             []EdgeView  `json:"edges"`
}

// StageView is one stage at one reading; see [sluice.StageStats].
type StageView struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Workers int    `json:"workers"`
	Running int    `json:"running"` // goroutines not exited yet
	Waiting int    `json:"waiting"` // of those, waiting for input or for room
	Busy    int    `json:"busy"`    // running - waiting

	In      int64 `json:"in"`
	Out     int64 `json:"out"`
	Dropped int64 `json:"dropped"`
	// Failed is the items its function failed on that its error policy
	// skipped or dead-lettered; Retries the calls it repeated.
	Failed       int64   `json:"failed"`
	Retries      int64   `json:"retries"`
	InPerSecond  float64 `json:"in_per_second"`
	OutPerSecond float64 `json:"out_per_second"`
	// Utilization is the share of its workers' time spent working over
	// the rate window, 0 to 1.
	Utilization    float64 `json:"utilization"`
	BusySeconds    float64 `json:"busy_seconds"`
	BlockedSeconds float64 `json:"blocked_seconds"`
	// ThrottledSeconds is the time its workers waited on its
	// [sluice.Throttle], summed over them.
	ThrottledSeconds float64 `json:"throttled_seconds"`
	// Auto is present for a stage whose worker count the engine chooses
	// ([sluice.Auto]): Workers is then that count.
	Auto *AutoView `json:"auto,omitempty"`

	QueueDepth    int64   `json:"queue_depth"` // items queued on its input
	QueueCapacity int     `json:"queue_capacity"`
	QueueFill     float64 `json:"queue_fill"` // depth/capacity, 0 for sources
	ChunkSize     int     `json:"chunk_size"` // items a chunk of its input carries now

	// Latency quantiles from the core's sampled histogram (one chunk in
	// eight): queueing plus processing, over the rate window, or over the
	// whole run when the window holds no sample. Each is interpolated
	// inside its bucket by [sluice.Histogram.Quantile]: within 1/16 of the
	// sampled value.
	LatencyP50Seconds float64 `json:"latency_p50_seconds"`
	LatencyP99Seconds float64 `json:"latency_p99_seconds"`
	LatencySamples    uint64  `json:"latency_samples"` // behind the quantiles

	Bottleneck bool `json:"bottleneck"`

	// Keys is the keys a Keyed or Window stage holds; Window describes a
	// Window stage's event time (nil for other stages).
	Keys   int64       `json:"keys,omitempty"`
	Window *WindowView `json:"window,omitempty"`
	// Connector is the figures of the broker connector the stage reads
	// from or writes to ([sluice.StageStats].Connector), as the metrics
	// list names them; absent for a stage without one.
	Connector []FigureView `json:"connector,omitempty"`

	// The last five minutes, one point per second (see
	// [PipelineView.HistoryFromSecond]): items per second through the
	// stage (taken from its input; handed on, for a source), and its
	// fullest input queue's fill as [Bottleneck] measures it. A rate
	// between two readings far apart is their average; a fill is known
	// only at a reading and is null in between.
	ItemsPerSecondHistory Series `json:"items_per_second_history"`
	QueueFillHistory      Series `json:"queue_fill_history"`
}

// FigureView is one series of a connector's metrics: its name as
// OpenTelemetry writes it ("sluice.kafka.source.transactions"), its own
// labels ("outcome=committed"; the pipeline and stage are the view's) and
// its value, in seconds for a metric in seconds.
type FigureView struct {
	Name   string  `json:"name"`
	Labels string  `json:"labels,omitempty"`
	Value  float64 `json:"value"`
}

// connectorFigures returns the series of the connectors' metrics in s, by
// stage.
func connectorFigures(s sluice.Snapshot) map[string][]FigureView {
	var by map[string][]FigureView
	metrics.Read(s, func(x metrics.Sample) {
		if !x.Metric.Connector() {
			return
		}
		var ls []string
		for i, n := range x.Metric.Labels {
			ls = append(ls, n+"="+x.Labels[2+i])
		}
		if by == nil {
			by = map[string][]FigureView{}
		}
		by[x.Stage()] = append(by[x.Stage()], FigureView{Name: x.Metric.Name, Labels: strings.Join(ls, ","), Value: x.Value})
	})
	return by
}

// WindowView is a Window stage's event time and windows; see
// [sluice.WindowStats].
type WindowView struct {
	WatermarkLagSeconds float64 `json:"watermark_lag_seconds"` // 0 before the first item
	Partitions          int     `json:"partitions"`
	IdlePartitions      int     `json:"idle_partitions"`
	Open                int64   `json:"open"`
	HeldReceipts        int64   `json:"held_receipts"`
	Emitted             int64   `json:"emitted"`
	Updated             int64   `json:"updated"`
	Late                int64   `json:"late"`
	LateDropped         int64   `json:"late_dropped"`
	Revoked             int64   `json:"revoked"`       // windows discarded for partitions taken away
	RevokedItems        int64   `json:"revoked_items"` // items of those partitions that arrived after the revoke, dropped unsettled
}

// AutoView is the engine's choice of a stage's worker count; see
// [sluice.AutoStats].
type AutoView struct {
	Min     int    `json:"min"`
	Max     int    `json:"max"`
	Reason  string `json:"reason"` // why it last changed: start, grow, no-gain, latency, failing, idle, throttled, probe (sluice.AutoReason)
	Detail  string `json:"detail"` // the same with the figures that decided it
	Changes int64  `json:"changes"`
	// ChangedSecondsAgo is how long before the reading it last changed.
	ChangedSecondsAgo float64 `json:"changed_seconds_ago"`
}

// EdgeView is one edge at one reading; see [sluice.EdgeStats].
type EdgeView struct {
	From      string  `json:"from"`
	To        string  `json:"to"`
	Sent      int64   `json:"sent"`
	Received  int64   `json:"received"`
	Dropped   int64   `json:"dropped"`
	Depth     int64   `json:"depth"`
	Capacity  int     `json:"capacity"`
	Fill      float64 `json:"fill"` // depth/capacity
	Policy    string  `json:"policy"`
	PerSecond float64 `json:"per_second"` // items sent per second
}

// viewOf computes a pipeline's view from its current reading, the base
// its rates are computed against (nil: the pipeline's start) and its
// history.
func viewOf(base *sluice.Snapshot, cur sluice.Snapshot, past *history) PipelineView {
	var b sluice.Snapshot
	if base != nil {
		b = *base
	}
	dt := (cur.Elapsed - b.Elapsed).Seconds()
	rate := func(now, then int64) float64 {
		if dt <= 0 {
			return 0
		}
		return float64(now-then) / dt
	}
	pv := PipelineView{
		Name: cur.Pipeline, Done: cur.Done, Error: cur.Err,
		ElapsedSeconds: cur.Elapsed.Seconds(), WindowSeconds: dt,
		Stages: make([]StageView, len(cur.Stages)),
		Edges:  make([]EdgeView, len(cur.Edges)),
	}
	figures := connectorFigures(cur)
	// Stages and edges are only ever appended to a pipeline, so the same
	// index names the same one in every reading.
	for i, s := range cur.Stages {
		var was sluice.StageStats
		if i < len(b.Stages) {
			was = b.Stages[i]
		}
		sv := StageView{
			Name: s.Name, Kind: s.Kind, Workers: s.Workers, Running: s.Running, Waiting: s.Waiting,
			Busy: max(0, s.Running-s.Waiting),
			In:   s.In, Out: s.Out, Dropped: s.Dropped, Failed: s.Failed, Retries: s.Retries,
			InPerSecond: rate(s.In, was.In), OutPerSecond: rate(s.Out, was.Out),
			BusySeconds: s.Busy.Seconds(), BlockedSeconds: s.Blocked.Seconds(),
			QueueDepth: s.InDepth, QueueCapacity: s.InCapacity, QueueFill: fill(s.InDepth, s.InCapacity), ChunkSize: s.InChunkSize,
			Keys: s.Keys,
		}
		if w := s.Window; w != nil {
			sv.Window = &WindowView{Partitions: w.Partitions, IdlePartitions: w.IdlePartitions, Open: w.Open,
				HeldReceipts: w.Held, Emitted: w.Emitted, Updated: w.Updated, Late: w.Late, LateDropped: w.LateDropped, Revoked: w.Revoked, RevokedItems: w.RevokedItems}
			if !w.Watermark.IsZero() {
				sv.Window.WatermarkLagSeconds = w.Lag.Seconds()
			}
		}
		sv.ThrottledSeconds = s.Throttled.Seconds()
		sv.Connector = figures[s.Name]
		if a := s.Auto; a != nil {
			sv.Auto = &AutoView{Min: a.Min, Max: a.Max, Reason: a.Reason.String(), Detail: a.Detail, Changes: a.Changes,
				ChangedSecondsAgo: max(0, cur.Taken.Sub(a.Changed).Seconds())}
		}
		if dt > 0 && s.Workers > 0 {
			sv.Utilization = min(1, max(0, (s.Busy-was.Busy).Seconds()/(dt*float64(s.Workers))))
		}
		h := since(s.Latency, was.Latency)
		if h.Count == 0 {
			h = s.Latency
		}
		sv.LatencySamples = h.Count
		sv.LatencyP50Seconds = h.Quantile(0.50).Seconds()
		sv.LatencyP99Seconds = h.Quantile(0.99).Seconds()
		pv.HistoryFromSecond, sv.ItemsPerSecondHistory, sv.QueueFillHistory = past.series(i)
		pv.Stages[i] = sv
	}
	for i, e := range cur.Edges {
		var was sluice.EdgeStats
		if i < len(b.Edges) {
			was = b.Edges[i]
		}
		pv.Edges[i] = EdgeView{
			From: e.From, To: e.To, Sent: e.Sent, Received: e.Received, Dropped: e.Dropped,
			Depth: e.Depth, Capacity: e.Capacity, Fill: edgeFill(e), Policy: e.Policy,
			PerSecond: rate(e.Sent, was.Sent),
		}
	}
	if i := Bottleneck(cur); i >= 0 {
		pv.Bottleneck = cur.Stages[i].Name
		pv.Stages[i].Bottleneck = true
	}
	return pv
}

func fill(depth int64, capacity int) float64 {
	if capacity <= 0 {
		return 0
	}
	return min(1, float64(depth)/float64(capacity))
}

// since returns the part of histogram h recorded after was (an earlier
// reading of the same histogram).
func since(h, was sluice.Histogram) sluice.Histogram {
	if len(was.Counts) != len(h.Counts) {
		return h
	}
	d := sluice.Histogram{Bounds: h.Bounds, Counts: make([]uint64, len(h.Counts)), Sum: h.Sum - was.Sum}
	for i, c := range h.Counts {
		d.Counts[i] = c - min(c, was.Counts[i])
		d.Count += d.Counts[i]
	}
	return d
}
