package onkafka

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/cmd/sluice/market"
)

// FlushEvents is how many events FlushBars produces.
const FlushEvents = 400

// FlushBars produces FlushEvents events to topic (ids from first on,
// none malformed and each of a known symbol, so that none is
// dead-lettered: settled; keyed by id if keyByID, else by symbol), every
// one an hour of event time after now, so that every partition's
// watermark passes every window of the events before them once they are
// read: the bars stage then emits every window those events fall in, and
// they are settled. It returns the start of the flush events' own window
// — every window before it is complete — and their event time; their
// windows stay open. Produce it
// once every partition of topic is read by the pipeline that will read
// it, or know that a member taking a partition over judges its backlog
// by the flushed watermark: late.
func FlushBars(ctx context.Context, brokers, topic string, first int, keyByID bool) (cut, at int64, err error) {
	at = time.Now().Add(time.Hour).UnixNano()
	pr := Producing{Brokers: brokers, Topic: topic, First: first, N: FlushEvents, KeyByID: keyByID,
		Clock: func(int) int64 { return at }}
	if _, err := ProduceEvents(ctx, pr); err != nil {
		return 0, 0, err
	}
	return market.WindowStart(at), at, nil
}

// ExpectedBars computes, by a plain loop (market.ReferenceBars with
// market.DefaultLateness), the bars of the events of an input topic read
// back in recs: the well-formed events of known symbols, taken in the
// order of their ids (the order they were produced in), each in the
// partition partitionOf gives (the record's, for an input keyed by
// symbol). It drops the windows that start at cut or later (a flush's,
// FlushBars) and returns the bars by key, and the ids, sorted, of the
// events it found too late for any bar. The pipeline's bars, read with
// FINAL (ReadBars), must equal them when every event's lag is far from
// the line between on time and late, as the generators' are (see
// market.ReferenceBars).
func ExpectedBars(recs []*kgo.Record, partitionOf func(*kgo.Record, market.Tick) int, cut int64) (map[market.BarKey]market.Bar, []uint64) {
	type rec struct {
		tick market.Tick
		part int
	}
	var rs []rec
	for _, kr := range recs {
		ev, err := market.Decode(kr.Value)
		if err != nil {
			continue
		}
		tk := market.Normalise(ev)
		if !market.Known(tk.Symbol) {
			continue
		}
		rs = append(rs, rec{tk, partitionOf(kr, tk)})
	}
	slices.SortFunc(rs, func(a, b rec) int { return cmp.Compare(a.tick.ID, b.tick.ID) })
	ticks := make([]market.Tick, len(rs))
	part := make(map[uint64]int, len(rs))
	for i, x := range rs {
		ticks[i] = x.tick
		part[x.tick.ID] = x.part
	}
	bars, late := market.ReferenceBars(ticks, func(tk market.Tick) int { return part[tk.ID] }, market.DefaultLateness())
	for k := range bars {
		if k.Start >= cut {
			delete(bars, k)
		}
	}
	ids := make([]uint64, len(late))
	for i, tk := range late {
		ids[i] = tk.ID
	}
	slices.Sort(ids)
	return bars, ids
}
