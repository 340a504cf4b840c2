package onkafka

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluicehq/sluice/cmd/sluice/market"
)

// SetupBars creates what the pipeline called name computes its bars into
// if it is missing — the topics NAME-bars and NAME-late, the ClickHouse
// table NAME_bars (CreateBarsTable), and cfg.Repartition's topic if set,
// topics of partitions partitions — and sets cfg.Bars.Names. It keeps
// what exists: `sluice serve`'s members share them.
func SetupBars(ctx context.Context, adm *kadm.Client, db *sql.DB, partitions int, name string, cfg *KafkaConfig) error {
	cfg.Bars.Names = BarNamesFor(name)
	topics := []string{cfg.Bars.Names.Topic, cfg.Bars.Names.Late}
	if cfg.Repartition != "" {
		topics = append(topics, cfg.Repartition)
	}
	if err := EnsureTopics(ctx, adm, partitions, topics...); err != nil {
		return err
	}
	return CreateBarsTable(ctx, db, cfg.Bars.Names.Table, false)
}

// BarsTally measures the bars a run stores: how many, how many of them
// updates by late events, the events too late for any bar, and how long
// after its window's end (by the wall clock: the generators' event times
// are produce times less up to 100 ms) each window's first pane left the
// window stage and was committed in ClickHouse. It also splits that
// latency at the moment the watermark passed the window's end, which it
// follows from outside (see BarsConfig.OnTick). TallyBars makes one; its
// methods are safe for concurrent use.
type BarsTally struct {
	mu               sync.Mutex
	stored, updates  int64
	late             atomic.Int64
	emitted, commits market.Latencies
	wm               wmTrack
	from             int64 // windows ending before it: in no latency figure (CountFrom)
	// From the moment the watermark passed a window's end (the arrival
	// of the tick that lifted the least of the partitions' watermarks
	// past it) to the pane leaving the window stage; that tick's
	// transport (its record's produce time → its arrival at the window);
	// the window's end → that tick's production (out-of-orderness, the
	// tick's own lag, and the wait for the slowest partition); and how
	// long after the first partition's watermark passed the end the last
	// one's did (by arrival).
	inStage, transport, toLift, spread market.Latencies
}

// TallyBars sets cfg.Bars' OnStored, OnTick and OnLate hooks to count
// into a new tally (replacing any set), and returns it. Its cost is a
// mutex and a few map operations per tick and per stored bar.
func TallyBars(cfg *KafkaConfig) *BarsTally {
	t := &BarsTally{}
	cfg.Bars.OnStored = func(bars []market.Bar, emitted []time.Time, committed time.Time) {
		t.mu.Lock()
		defer t.mu.Unlock()
		for i, b := range bars {
			t.stored++
			if b.Revision > 0 {
				t.updates++
				continue
			}
			end := time.Unix(0, b.Start).Add(market.BarWidth)
			if t.wm.flushed[end.UnixNano()] || end.UnixNano() < t.from {
				continue
			}
			t.emitted.Add(emitted[i].Sub(end))
			t.commits.Add(committed.Sub(end))
			if ps, ok := t.wm.pass[end.UnixNano()]; ok {
				t.inStage.Add(emitted[i].Sub(ps.arrived))
				t.transport.Add(ps.arrived.Sub(ps.produced))
				t.toLift.Add(ps.produced.Sub(end))
				t.spread.Add(time.Duration(ps.arrived.UnixNano() - t.wm.first[end.UnixNano()]))
			}
		}
	}
	t.wm.ooo = int64(cfg.Bars.Lateness.OutOfOrderness)
	if t.wm.ooo == 0 {
		t.wm.ooo = int64(market.DefaultLateness().OutOfOrderness)
	}
	cfg.Bars.OnTick = func(part int32, ts int64, produced, arrived time.Time) {
		t.mu.Lock()
		t.wm.tick(part, ts, produced, arrived)
		t.mu.Unlock()
	}
	cfg.Bars.OnLate = func() { t.late.Add(1) }
	return t
}

// Flushing tells t that the ticks at event time from or later are a
// flush's (FlushBars): the windows whose end such a tick lifts the
// watermark past are counted as stored, in no latency figure — they
// waited for the flush, not for the pipeline. Call it before the flush
// is produced.
func (t *BarsTally) Flushing(from int64) {
	t.mu.Lock()
	t.wm.flushFrom = from
	t.mu.Unlock()
}

// CountFrom keeps the windows that end before start out of the latency
// figures (they are counted as stored): those of a warm-up.
func (t *BarsTally) CountFrom(start time.Time) {
	t.mu.Lock()
	t.from = start.UnixNano()
	t.mu.Unlock()
}

// Counts returns the bars stored so far (each revision of a window
// counts), how many of them were updates (revision > 0), and the events
// found too late for any bar.
func (t *BarsTally) Counts() (stored, updates, late int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stored, t.updates, t.late.Load()
}

// Print writes the tally's summary to w, four lines: the counts, naming
// the table and topics of names; window end → bar emitted and →
// committed; watermark passed → emitted; and the lifting tick's split.
func (t *BarsTally) Print(w io.Writer, names BarNames) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(w, "bars: %d stored in ClickHouse table %s and produced to %s (%d of them updates by late events), %d events too late for any bar produced to %s\n",
		t.stored, names.Table, names.Topic, t.updates, t.late.Load(), names.Late)
	fmt.Fprintf(w, "  window end → bar emitted: p50 %s  p99 %s  max %s; → committed in ClickHouse: p50 %s  p99 %s  max %s\n",
		market.Ms(t.emitted.Q(0.5)), market.Ms(t.emitted.Q(0.99)), market.Ms(t.emitted.Max()),
		market.Ms(t.commits.Q(0.5)), market.Ms(t.commits.Q(0.99)), market.Ms(t.commits.Max()))
	q := func(l *market.Latencies) string {
		return fmt.Sprintf("p50 %s  p99 %s  max %s", market.Ms(l.Q(0.5)), market.Ms(l.Q(0.99)), market.Ms(l.Max()))
	}
	fmt.Fprintf(w, "  watermark passed the end (arrival of the tick that lifted the least partition's) → bar emitted: %s\n", q(&t.inStage))
	fmt.Fprintf(w, "    that tick: window end → produced %s; produced → at the window %s; first partition past the end → last %s\n",
		q(&t.toLift), q(&t.transport), q(&t.spread))
}

// wmTrack follows the bars window's watermark from outside, as the stage
// computes it (the least over the partitions seen of each one's newest
// event time, less the out-of-orderness; no partition idles at a
// sustained rate), and records when it passed each window end.
type wmTrack struct {
	ooo       int64
	newest    map[int32]int64
	next      int64           // the next window end to pass; 0 before the first tick
	first     map[int64]int64 // window end → arrival (ns) when a partition's watermark first passed it
	pass      map[int64]wmPass
	firstNext int64
	flushFrom int64          // ticks at this event time or later are a flush's; 0: none
	flushed   map[int64]bool // window ends a flush's tick lifted the watermark past
}

// wmPass is the tick that lifted the watermark past a window's end.
type wmPass struct{ arrived, produced time.Time }

func (w *wmTrack) tick(part int32, ts int64, produced, arrived time.Time) {
	if w.newest == nil {
		w.newest, w.first, w.pass, w.flushed = map[int32]int64{}, map[int64]int64{}, map[int64]wmPass{}, map[int64]bool{}
	}
	width := int64(market.BarWidth)
	if ts <= w.newest[part] {
		return
	}
	w.newest[part] = ts
	if w.firstNext == 0 {
		w.firstNext = (ts-w.ooo)/width*width + width
	}
	flush := w.flushFrom != 0 && ts >= w.flushFrom
	for ; w.firstNext <= ts-w.ooo; w.firstNext += width {
		if flush { // a flush passes an hour of window ends: record none
			w.firstNext = (ts-w.ooo)/width*width + width
			break
		}
		w.first[w.firstNext] = arrived.UnixNano()
	}
	least := int64(math.MaxInt64)
	for _, n := range w.newest {
		least = min(least, n)
	}
	wm := least - w.ooo
	if w.next == 0 {
		w.next = wm/width*width + width
	}
	if flush {
		// The windows still open that a flush closes end before the
		// last real tick's event time plus a window.
		for ; w.next <= wm && w.next <= w.flushFrom; w.next += width {
			w.flushed[w.next] = true
		}
		if w.next <= wm {
			w.next = wm/width*width + width
		}
		return
	}
	for ; w.next <= wm; w.next += width {
		w.pass[w.next] = wmPass{arrived, produced}
	}
}
