package clickhousex_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/clickhousex"
)

type trade struct {
	Symbol string
	Price  float64
}

// Trades stored in batch inserts, each acknowledged once its batch has
// committed. It needs a server: start one with scripts/clickhouse start,
// which prints CLICKHOUSE_ADDR.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := clickhousex.Open(ctx, os.Getenv("CLICKHOUSE_ADDR"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS trades (symbol String, price Float64) ENGINE = MergeTree ORDER BY symbol"); err != nil {
		log.Fatal(err)
	}

	w := clickhousex.NewWriter(db, "trades", []string{"symbol", "price"},
		func(t trade) []any { return []any{t.Symbol, t.Price} },
		clickhousex.OnCommit(func(rows []trade) {
			// Acknowledge the source messages of rows here.
		}))
	p := sluice.New(ctx)
	trades := sluice.FromSlice(p, "trades", []trade{{"ACME", 10.5}, {"INIT", 99}})
	clickhousex.Insert(p, "store", trades, w, sluice.Retry(5, 50*time.Millisecond, 2*time.Second))
	if err := p.Wait(); err != nil {
		log.Fatal(err)
	}
	n, err := clickhousex.Count(ctx, db, "trades")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(n, "rows")
}
