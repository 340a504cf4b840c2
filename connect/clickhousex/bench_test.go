package clickhousex_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/clickhousex"
)

// BenchmarkInsert1M inserts 1M small rows (an id and a short string) per
// iteration: through a pipeline (FromSlice → Insert, natural batches of
// sluice.DefaultChunk rows), and with a bare database/sql loop that
// inserts the same rows in transactions of the same size — the server's
// and the driver's ceiling, measured in the same run.
//
//	go test -run '^$' -bench Insert1M -benchtime 3x ./connect/clickhousex
func BenchmarkInsert1M(b *testing.B) {
	const n = 1_000_000
	addr := needServer(b)
	ctx := context.Background()
	db, err := clickhousex.Open(ctx, addr)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	es := make([]event, n)
	for i := range es {
		es[i] = event{ID: uint64(i), Name: "event"}
	}
	reset := func(b *testing.B) {
		b.Helper()
		for _, q := range []string{"DROP TABLE IF EXISTS bench", "CREATE TABLE bench (id UInt64, name String) ENGINE = MergeTree ORDER BY id"} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	}
	report := func(b *testing.B, elapsed time.Duration) {
		b.ReportMetric(float64(n)*float64(b.N)/elapsed.Seconds(), "rows/s")
		b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n)/float64(b.N), "ns/row")
	}

	b.Run("pipeline", func(b *testing.B) {
		var elapsed time.Duration
		for b.Loop() {
			b.StopTimer()
			reset(b)
			w := clickhousex.NewWriter(db, "bench", eventColumns, eventRow)
			b.StartTimer()
			t0 := time.Now()
			p := sluice.New(ctx)
			clickhousex.Insert(p, "store", sluice.FromSlice(p, "events", es), w)
			if err := p.Wait(); err != nil {
				b.Fatal(err)
			}
			elapsed += time.Since(t0)
		}
		report(b, elapsed)
	})
	b.Run("bare", func(b *testing.B) {
		var elapsed time.Duration
		for b.Loop() {
			b.StopTimer()
			reset(b)
			b.StartTimer()
			t0 := time.Now()
			for i := 0; i < n; i += sluice.DefaultChunk {
				if err := bareInsert(ctx, db, es[i:min(n, i+sluice.DefaultChunk)]); err != nil {
					b.Fatal(err)
				}
			}
			elapsed += time.Since(t0)
		}
		report(b, elapsed)
	})
}

// bareInsert is the textbook clickhouse-go v1 batch: one transaction, one
// prepared INSERT, a row per Exec, Commit.
func bareInsert(ctx context.Context, db *sql.DB, rows []event) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	stmt, err := tx.PrepareContext(ctx, "INSERT INTO bench (id, name) VALUES")
	if err != nil {
		tx.Rollback()
		return err
	}
	for _, e := range rows {
		if _, err := stmt.ExecContext(ctx, e.ID, e.Name); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}
