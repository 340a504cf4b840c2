package onkafka

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/connect/clickhousex"
)

// BarNames are the Kafka topics and ClickHouse table of the bars of the
// pipeline called name: topic NAME-bars, table NAME_bars (with - as _),
// and topic NAME-late for the events too late for any bar.
type BarNames struct {
	Topic, Table, Late string
}

// BarNamesFor returns the bar names of the pipeline called name, which
// must pass CheckName.
func BarNamesFor(name string) BarNames {
	return BarNames{Topic: name + "-bars", Table: strings.ReplaceAll(name, "-", "_") + "_bars", Late: name + "-late"}
}

// barsDDL is the columns and engine of a bars table. A window stored
// again — recomputed after a restart, or updated by a late tick — is one
// row per symbol and window once merged: ReplacingMergeTree keeps, per
// (symbol, start), the row of the highest version, and the version is the
// trades the bar folded. Not its revision: a window the process that
// emitted it did not live to settle is recomputed from its redelivered
// ticks, revision 0 again, and a window whose first ticks were settled
// before a crash (they lay before the first unsettled offset of their
// partition) may be recomputed from its later ticks alone; a revision
// would let that partial bar replace the whole one, the trade count does
// not. Equal counts are the same ticks, hence the same bar. Read with
// FINAL (ReadBars) to see the merged rows.
const barsDDL = `(symbol String, start Int64, open Int64, high Int64, low Int64, close Int64,
	volume Int64, notional Int64, trades UInt64, revision Int64, vwap Float64)
	ENGINE = ReplacingMergeTree(trades) ORDER BY (symbol, start)`

// barColumns are the bars table's columns as a writer appends them.
var barColumns = []clickhousex.Column[market.Bar]{
	clickhousex.StringColumn("symbol", func(b *market.Bar) string { return b.Symbol }),
	clickhousex.Int64Column("start", func(b *market.Bar) int64 { return b.Start }),
	clickhousex.Int64Column("open", func(b *market.Bar) int64 { return b.Open }),
	clickhousex.Int64Column("high", func(b *market.Bar) int64 { return b.High }),
	clickhousex.Int64Column("low", func(b *market.Bar) int64 { return b.Low }),
	clickhousex.Int64Column("close", func(b *market.Bar) int64 { return b.Close }),
	clickhousex.Int64Column("volume", func(b *market.Bar) int64 { return b.Volume }),
	clickhousex.Int64Column("notional", func(b *market.Bar) int64 { return b.Notional }),
	clickhousex.UInt64Column("trades", func(b *market.Bar) uint64 { return uint64(b.Trades) }),
	clickhousex.Int64Column("revision", func(b *market.Bar) int64 { return b.Revision }),
	clickhousex.Float64Column("vwap", func(b *market.Bar) float64 { return b.VWAP() / 1e4 }),
}

// NewBarWriter returns a writer of bars into table (made by
// CreateBarsTable).
func NewBarWriter(db *sql.DB, table string, opts ...clickhousex.WriterOption) *clickhousex.Writer[market.Bar] {
	return clickhousex.NewColumnWriter(db, table, barColumns, opts...)
}

// CreateBarsTable creates table with barsDDL if it does not exist,
// dropping it first if fresh.
func CreateBarsTable(ctx context.Context, db *sql.DB, table string, fresh bool) error {
	ctx, cancel := context.WithTimeout(ctx, tableTimeout)
	defer cancel()
	if fresh {
		if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+table); err != nil {
			return fmt.Errorf("dropping table %s: %w", table, err)
		}
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table+" "+barsDDL); err != nil {
		return fmt.Errorf("creating table %s: %w", table, err)
	}
	return nil
}

// ReadBars reads table with FINAL — one row per symbol and window, the
// merged one — and returns its bars by key, and how many rows the table
// holds before merging (one per insert of a bar, so replays show there).
func ReadBars(ctx context.Context, db *sql.DB, table string) (map[market.BarKey]market.Bar, int64, error) {
	var raw int64
	if err := db.QueryRowContext(ctx, "SELECT count() FROM "+table).Scan(&raw); err != nil {
		return nil, 0, fmt.Errorf("counting %s: %w", table, err)
	}
	rows, err := db.QueryContext(ctx, "SELECT symbol, start, open, high, low, close, volume, notional, trades, revision FROM "+table+" FINAL")
	if err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", table, err)
	}
	defer rows.Close()
	out := make(map[market.BarKey]market.Bar)
	for rows.Next() {
		var b market.Bar
		var trades uint64
		if err := rows.Scan(&b.Symbol, &b.Start, &b.Open, &b.High, &b.Low, &b.Close, &b.Volume, &b.Notional, &trades, &b.Revision); err != nil {
			return nil, 0, fmt.Errorf("reading %s: %w", table, err)
		}
		b.Trades = int64(trades)
		if _, dup := out[b.Key()]; dup {
			return nil, 0, fmt.Errorf("reading %s: two rows for %s at %d after FINAL", table, b.Symbol, b.Start)
		}
		out[b.Key()] = b
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("reading %s: %w", table, err)
	}
	return out, raw, nil
}
