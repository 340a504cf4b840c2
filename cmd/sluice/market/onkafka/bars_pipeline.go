package onkafka

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/connect/clickhousex"
	"github.com/sluicehq/sluice/connect/kafkax"
)

// BarsConfig is how StartKafka computes bars: per symbol, one-second
// OHLC + volume + VWAP bars by event time, stored in a ClickHouse table
// (CreateBarsTable) and produced to a topic. The zero value computes none.
type BarsConfig struct {
	Names    BarNames        // the topic and table; an empty Table computes no bars
	Lateness market.Lateness // zero: market.DefaultLateness
	// Idle is how long a partition may send nothing before the watermark
	// stops waiting for it (one this member no longer owns, or one the
	// generator sends nothing to); zero: DefaultBarIdle.
	Idle time.Duration
	// OnStored, if not nil, is called with each batch of bars once its
	// insert has committed, with when each window's pane left the window
	// stage, before they are settled; on the store stage's goroutines.
	OnStored func(bars []market.Bar, emitted []time.Time, committed time.Time)
	// OnLate, if not nil, is called for each event too late for its bar,
	// as it goes to the late topic.
	OnLate func()
	// OnTick, if not nil, is called with each tick on its way into the
	// window stage, in the order the stage takes them: its partition,
	// its event time, its record's timestamp (when it was produced) and
	// when it reached the window's input; on the decode stage's
	// goroutine. A measuring hook: it should be cheap.
	OnTick func(partition int32, eventTime int64, produced, arrived time.Time)
}

// errLate is the cause a late event is produced to the late topic with.
var errLate = errors.New("too late for its bar")

// DefaultBarIdle is BarsConfig's default Idle.
const DefaultBarIdle = 2 * time.Second

// barPane is a window's pane on its way to the bars table and topic, and
// when it left the window stage.
type barPane struct {
	sluice.Pane[string, market.Bar]
	emitted time.Time
}

// bar returns the pane's bar, its revision set.
func (b *barPane) bar() market.Bar {
	v := b.Acc
	v.Revision = int64(b.Revision)
	return v
}

// Bars returns the bars stored so far (each revision of a window counts)
// and the ticks found late: beyond the allowed lateness, in no bar.
func (k *Kafka) Bars() (stored, late int64) { return k.barsStored.Load(), k.late.Load() }

// buildBars adds the bars branch to the pipeline: the records, in their
// partitions' order → decode (one worker: the order is kept, so that the
// watermark sees each partition's own disorder and no more; malformed
// records and unknown symbols are left to the main branch) → Window
// (tumbling BarWidth by event time, keyed by symbol) → fan-out: store
// (ClickHouse, the bars table) and encode → publish (the bars topic); the
// late rows go to the late topic.
func (k *Kafka) buildBars(p *sluice.Pipeline, db *sql.DB, cfg KafkaConfig, msgs sluice.Stream[kafkax.Msg]) {
	bc := cfg.Bars
	if bc.Lateness == (market.Lateness{}) {
		bc.Lateness = market.DefaultLateness()
	}
	if bc.Idle == 0 {
		bc.Idle = DefaultBarIdle
	}
	k.bars = NewBarWriter(db, bc.Names.Table, clickhousex.SinkWorkers(1), clickhousex.Logger(cfg.Observe.Logger))
	known := sluice.FlatMap(p, "decode-bars", msgs, 1, func(_ context.Context, m kafkax.Msg, emit func(Row) bool) error {
		ev, err := market.Decode(m.Value())
		if err != nil {
			return nil
		}
		if t := market.Normalise(ev); market.Known(t.Symbol) {
			if bc.OnTick != nil {
				bc.OnTick(m.Partition(), t.TS, m.Record().Timestamp, time.Now())
			}
			emit(Row{msg: m, tick: t})
		}
		return nil
	})
	var late sluice.Stream[sluice.Late[Row]]
	panes := sluice.Window(p, "bars", known, 1, sluice.WindowSpec[Row, string, market.Bar]{
		Windows:    sluice.Tumbling(market.BarWidth),
		Key:        func(r Row) string { return r.tick.Symbol },
		Time:       func(r Row) time.Time { return time.Unix(0, r.tick.TS) },
		Fold:       func(b *market.Bar, r Row) { b.Add(r.tick) },
		OutOfOrder: bc.Lateness.OutOfOrderness,
		Lateness:   bc.Lateness.AllowedLateness,
		Idle:       bc.Idle,
		Late:       &late,
	})
	lateOuts := sluice.Map(p, "late", late, 1, func(_ context.Context, l sluice.Late[Row]) (kafkax.Out, error) {
		k.late.Add(1)
		if bc.OnLate != nil {
			bc.OnLate()
		}
		return kafkax.DeadLetterOut(l.Item.msg, bc.Names.Late, fmt.Errorf("%w: event time %s, watermark %s",
			errLate, l.Time.UTC().Format(time.RFC3339Nano), l.Watermark.UTC().Format(time.RFC3339Nano))), nil
	})
	kafkax.Produce(p, "publish-late", lateOuts, k.Sink)
	stamped := sluice.Map(p, "stamp", panes, 1, func(_ context.Context, pn sluice.Pane[string, market.Bar]) (barPane, error) {
		return barPane{Pane: pn, emitted: time.Now()}, nil
	})
	copies := sluice.Broadcast(p, "bars-out", stamped, 2)
	sluice.ForEachChunk(p, "store-bars", copies[0], 1, func(ctx context.Context, ps []barPane) error {
		bars := make([]market.Bar, len(ps))
		for i := range ps {
			bars[i] = ps[i].bar()
		}
		if err := k.bars.Write(ctx, bars); err != nil {
			return err
		}
		if bc.OnStored != nil {
			at := make([]time.Time, len(ps))
			for i := range ps {
				at[i] = ps[i].emitted
			}
			bc.OnStored(bars, at, time.Now())
		}
		k.barsStored.Add(int64(len(bars)))
		return nil
	}, sluice.Gather(clickhousex.DefaultGather), sluice.Retry(3, 100*time.Millisecond, time.Second))
	outs := sluice.Map(p, "encode-bars", copies[1], 1, func(_ context.Context, b barPane) (kafkax.Out, error) {
		v := b.bar()
		return kafkax.Out{Topic: bc.Names.Topic, Key: []byte(v.Symbol), Value: market.AppendBar(nil, &v), From: b.Receipt}, nil
	})
	kafkax.Produce(p, "publish-bars", outs, k.Sink)
}
