package clickhousex_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/clickhousex"
)

// BenchmarkInsert1M inserts 1M small rows (an id and a short string) per
// iteration: through a pipeline (FromSlice → Insert) with the default
// chunks — 682 items of this 24-byte type, the 16 KiB ceiling — and with
// chunks of 8192; and with a bare database/sql loop inserting the same
// rows in transactions of the same sizes, the driver's and server's
// ceiling, measured in the same run.
//
//	go test -run '^$' -bench Insert1M -benchtime 1x ./connect/clickhousex
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
	// run times one insert of es per iteration and reports rows/s and
	// rows per batch.
	run := func(b *testing.B, insert func() (batches int64)) {
		var elapsed time.Duration
		var batches int64
		for b.Loop() {
			b.StopTimer()
			reset(b)
			b.StartTimer()
			t0 := time.Now()
			batches += insert()
			elapsed += time.Since(t0)
		}
		b.ReportMetric(float64(n)*float64(b.N)/elapsed.Seconds(), "rows/s")
		b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n)/float64(b.N), "ns/row")
		b.ReportMetric(float64(n)*float64(b.N)/float64(batches), "rows/batch")
	}
	for _, chunk := range []int{0, 8192} {
		name := "pipeline/chunk=default"
		var opts []sluice.StageOption
		if chunk > 0 {
			name = fmt.Sprintf("pipeline/chunk=%d", chunk)
			opts = append(opts, sluice.Chunk(chunk))
		}
		b.Run(name, func(b *testing.B) {
			run(b, func() int64 {
				w := clickhousex.NewWriter(db, "bench", eventColumns, eventRow)
				p := sluice.New(ctx)
				clickhousex.Insert(p, "store", sluice.FromSlice(p, "events", es, opts...), w)
				if err := p.Wait(); err != nil {
					b.Fatal(err)
				}
				return w.Stats().Batches
			})
		})
	}
	for _, size := range []int{682, 8192} {
		b.Run(fmt.Sprintf("bare/batch=%d", size), func(b *testing.B) {
			run(b, func() (batches int64) {
				for i := 0; i < n; i += size {
					if err := bareInsert(ctx, db, es[i:min(n, i+size)]); err != nil {
						b.Fatal(err)
					}
					batches++
				}
				return batches
			})
		})
	}
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
