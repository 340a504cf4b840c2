package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
)

// setupBars creates what `sluice serve` computes its bars into if it is
// missing — the topic NAME-bars and the ClickHouse table NAME_bars, and
// cfg.Repartition's topic if set — and sets them in cfg.
func setupBars(ctx context.Context, adm *kadm.Client, db *sql.DB, partitions int, name string, cfg *onkafka.KafkaConfig) error {
	cfg.Bars.Names = onkafka.BarNamesFor(name)
	topics := []string{cfg.Bars.Names.Topic, cfg.Bars.Names.Late}
	if cfg.Repartition != "" {
		topics = append(topics, cfg.Repartition)
	}
	if err := onkafka.EnsureTopics(ctx, adm, partitions, topics...); err != nil {
		return err
	}
	return onkafka.CreateBarsTable(ctx, db, cfg.Bars.Names.Table, false)
}

// barsTally measures the bars a run stores: how many, and how long after
// its window's end (by the wall clock: the generators' event times are
// produce times less up to 100 ms) each pane left the window stage and
// was committed in ClickHouse — first emissions only, not updates.
type barsTally struct {
	mu               sync.Mutex
	stored, updates  int64
	late             atomic.Int64
	emitted, commits market.Latencies
}

// tallyBars sets cfg.Bars.OnStored to count into a new tally.
func tallyBars(cfg *onkafka.KafkaConfig) *barsTally {
	t := &barsTally{}
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
			t.emitted.Add(emitted[i].Sub(end))
			t.commits.Add(committed.Sub(end))
		}
	}
	cfg.Bars.OnLate = func() { t.late.Add(1) }
	return t
}

func (t *barsTally) print(w io.Writer, names onkafka.BarNames) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(w, "bars: %d stored in ClickHouse table %s and produced to %s (%d of them updates by late events), %d events too late for any bar produced to %s\n",
		t.stored, names.Table, names.Topic, t.updates, t.late.Load(), names.Late)
	fmt.Fprintf(w, "  window end → bar emitted: p50 %s  p99 %s  max %s; → committed in ClickHouse: p50 %s  p99 %s  max %s\n",
		market.Ms(t.emitted.Q(0.5)), market.Ms(t.emitted.Q(0.99)), market.Ms(t.emitted.Max()),
		market.Ms(t.commits.Q(0.5)), market.Ms(t.commits.Q(0.99)), market.Ms(t.commits.Max()))
}
