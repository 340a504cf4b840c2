package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/bench/internal/services/brokers"
	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
)

// The bars of `loadtest kafka` (on unless --bars=false), as `sluice
// serve` computes them: per symbol, one-second OHLC + volume + VWAP bars
// by event time into the ClickHouse table NAME_bars and the topic
// NAME-bars, late events to NAME-late, measured by onkafka's tally.
//
// A window is emitted, and its events settled, once the watermark passes
// its end; the last windows of a run would stay open, their events never
// settled. So once the generator is done (the backlog: before the
// pipeline starts; sustained: when the window closes) the run produces a
// flush (onkafka.FlushBars): events an hour of event time ahead, ids
// from flushFirst, which close every window before them. Their own
// windows stay open and they stay unsettled; the run ends once every
// other event is settled and the flush has been received (so that it is
// stored by the main branch, as the input topic says). Then the bars
// table, read with FINAL, is compared with bars a plain loop computes
// over the events read back from the input topic
// (onkafka.ExpectedBars: each event in its partition, in the order of
// the ids, late ones beyond the allowed lateness in no bar, as the
// window stage judges them): a bar missing, different or extra fails the
// run.

// flushFirst is the id of a run's first flush event: above any id the
// generators give.
const flushFirst = 1 << 40

// barsLab is the bars side of one run.
type barsLab struct {
	names onkafka.BarNames
	tally *onkafka.BarsTally
	hooks onkafka.BarsConfig // the tally's hooks
	cut   int64              // the flush's window start: every window before it is complete; 0 before the flush
	in    string             // the input topic
	probe *brokerProbe       // the sustained window's baseline; nil: none
}

// newBarsLab returns the bars side of a run of names, or nil with
// --bars=false.
func newBarsLab(f kafkaFlags) *barsLab {
	if !f.bars {
		return nil
	}
	var cfg onkafka.KafkaConfig
	b := &barsLab{names: onkafka.BarNamesFor(f.name), tally: onkafka.TallyBars(&cfg), in: onkafka.NamesFor(f.name).In}
	b.hooks = cfg.Bars
	b.hooks.Names = b.names
	return b
}

// topics are the topics the bars add to a run's reset.
func (b *barsLab) topics() []string {
	if b == nil {
		return nil
	}
	return []string{b.names.Topic, b.names.Late}
}

// open starts the sustained window's figures: the windows ending from
// now on, and the broker probe beside them.
func (b *barsLab) open(now time.Time, brokers string) error {
	if b == nil {
		return nil
	}
	b.tally.CountFrom(now)
	var err error
	b.probe, err = startBrokerProbe(brokers, b.in)
	return err
}

// stopProbe stops the broker probe, if one runs.
func (b *barsLab) stopProbe() {
	if b != nil {
		b.probe.stop()
	}
}

// flush produces the flush to the input topic and returns how many
// events it holds.
func (b *barsLab) flush(ctx context.Context, brokers string) (int64, error) {
	if b == nil {
		return 0, nil
	}
	b.stopProbe()
	b.tally.Flushing(time.Now().Add(30 * time.Minute).UnixNano())
	cut, _, err := onkafka.FlushBars(ctx, brokers, b.in, flushFirst, false)
	if err != nil {
		return 0, fmt.Errorf("producing the bars' flush: %w", err)
	}
	b.cut = cut
	return onkafka.FlushEvents, nil
}

// print writes the tally's summary.
func (b *barsLab) print(w io.Writer, backlog bool) {
	b.tally.Print(w, b.names)
	b.probe.print(w, b.in)
	if backlog {
		fmt.Fprintln(w, "  (over a backlog the events were produced before the pipeline started: the latencies from a window's end include that wait)")
	} else {
		fmt.Fprintln(w, "  (the latencies: of the windows that end in the sustained window, after the warm-up)")
	}
	fmt.Fprintf(w, "  a flush of %d events an hour ahead (ids from %d) closed the last windows: stored besides, unsettled, in no figure\n", onkafka.FlushEvents, flushFirst)
}

// check compares the bars table, read with FINAL, with the bars of a
// plain loop over the events of the input topic, and says so; a bar
// missing, different or extra is an error.
func (b *barsLab) check(ctx context.Context, db *sql.DB, brokersAt string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	recs, err := brokers.Records(ctx, brokersAt, b.in)
	if err != nil {
		return fmt.Errorf("bars check: %w", err)
	}
	want, late := onkafka.ExpectedBars(recs, func(r *kgo.Record, _ market.Tick) int { return int(r.Partition) }, b.cut)
	got, raw, err := onkafka.ReadBars(ctx, db, b.names.Table)
	if err != nil {
		return fmt.Errorf("bars check: %w", err)
	}
	for k := range got {
		if k.Start >= b.cut {
			delete(got, k)
		}
	}
	missing, different, extra := market.BarDiff(got, want)
	_, _, found := b.tally.Counts()
	fmt.Fprintf(w, "bars check: %d bars in %s with FINAL (%d rows before merging) against %d from a plain loop over the %d records of %s (it finds %d events late, the pipeline %d): %d missing, %d different, %d extra\n",
		len(got), b.names.Table, raw, len(want), len(recs), b.in, len(late), found, len(missing), len(different), len(extra))
	if len(missing)+len(different)+len(extra) == 0 {
		return nil
	}
	for _, ks := range []struct {
		what string
		keys []market.BarKey
	}{{"missing", missing}, {"different", different}, {"extra", extra}} {
		for _, k := range ks.keys[:min(3, len(ks.keys))] {
			fmt.Fprintf(w, "  %s: %s at %s: table %+v, plain loop %+v\n", ks.what, k.Symbol,
				time.Unix(0, k.Start).UTC().Format(time.TimeOnly+".000"), got[k], want[k])
		}
	}
	return fmt.Errorf("bars check: %d missing, %d different, %d extra", len(missing), len(different), len(extra))
}
