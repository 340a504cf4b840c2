package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/bench/internal/services/brokers"
	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
	"github.com/sluicehq/sluice/connect/clickhousex"
	"github.com/sluicehq/sluice/connect/kafkax"
)

// What a run of the market pipeline must have stored, checked against
// what the brokers hold: every valid event once (after de-duplication:
// at least once), every bad one dead-lettered with its reason.

// keys is a set of event ids, or of partition/offset positions.
type keys map[string]bool

// records reads topic back up to its end offsets, failing the test.
func records(t *testing.T, kafka, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	recs, err := brokers.Records(ctx, kafka, topic)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// expected sorts the events of the input topic: the ids of the valid
// ones, which the pipeline must store, and the positions of the others,
// which it must dead-letter.
func expected(t *testing.T, kafka, topic string) (good, dead keys) {
	t.Helper()
	good, dead = keys{}, keys{}
	for _, r := range records(t, kafka, topic) {
		if ev, err := market.Decode(r.Value); err == nil && market.Known(market.Normalise(ev).Symbol) {
			good[strconv.FormatUint(ev.ID, 10)] = true
		} else {
			dead[position(r.Partition, r.Offset)] = true
		}
	}
	return good, dead
}

func position(partition int32, offset int64) string { return fmt.Sprintf("%d/%d", partition, offset) }

// sameKeys reports, naming what, the keys of want that got lacks and the
// keys got has beyond want (a few of each).
func sameKeys(t *testing.T, what string, got, want keys) {
	t.Helper()
	var missing, extra []string
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	if len(missing)+len(extra) > 0 {
		slices.Sort(missing)
		slices.Sort(extra)
		t.Errorf("%s: %d of %d missing %v, %d not expected %v", what, len(missing), len(want), missing[:min(5, len(missing))], len(extra), extra[:min(5, len(extra))])
	}
}

// checkStored checks the table, the downstream topic and the dead-letter
// topic of names against good and dead, and returns the table's rows.
func checkStored(t *testing.T, s servicesAt, names onkafka.Names, good, dead keys) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db, err := clickhousex.Open(ctx, s.clickhouse)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := db.QueryContext(ctx, "SELECT id FROM "+names.Table)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	stored := keys{}
	for rs.Next() {
		var id uint64
		if err := rs.Scan(&id); err != nil {
			t.Fatal(err)
		}
		rows++
		stored[strconv.FormatUint(id, 10)] = true
	}
	if err := rs.Close(); err != nil {
		t.Fatal(err)
	}
	sameKeys(t, "ClickHouse's ids", stored, good)

	downstream := keys{}
	for _, r := range records(t, s.kafka, names.Out) {
		id, _, _ := strings.Cut(string(r.Value), ",")
		downstream[id] = true
	}
	sameKeys(t, "the downstream topic's ids", downstream, good)

	parked := keys{}
	for _, r := range records(t, s.kafka, names.Dead) {
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		if h[kafkax.HeaderError] == "" {
			t.Errorf("dead letter %q carries no reason (headers %v)", r.Value, slices.Sorted(maps.Keys(h)))
		}
		parked[h[kafkax.HeaderPartition]+"/"+h[kafkax.HeaderOffset]] = true
	}
	sameKeys(t, "the dead-letter topic's positions in "+names.In, parked, dead)
	return rows
}
