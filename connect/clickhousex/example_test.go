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

// trade is a row. In a pipeline fed by a broker it embeds the receipt of
// the message it came from (a kafkax.Msg's, say), so that Insert
// acknowledges the message once the row's batch has committed.
type trade struct {
	sluice.Receipt
	Symbol string
	Price  float64
}

// Trades stored in batch inserts; each one's receipt is settled once its
// batch has committed. It needs a server: start one with
// scripts/clickhouse start, which prints CLICKHOUSE_ADDR.
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
		func(t trade) []any { return []any{t.Symbol, t.Price} })
	p := sluice.New(ctx)
	trades := sluice.FromSlice(p, "trades", []trade{{Symbol: "ACME", Price: 10.5}, {Symbol: "INIT", Price: 99}})
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
