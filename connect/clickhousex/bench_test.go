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
	ctx := context.Background()
	db := benchDB(b)
	es := make([]event, n)
	for i := range es {
		es[i] = event{ID: uint64(i), Name: "event"}
	}
	reset := func(b *testing.B) { recreate(b, db, "bench", "id UInt64, name String") }
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

// sizeRow has the demo's row shape: a market event and its reference
// data, ten columns (six integers, four short strings).
type sizeRow struct {
	ID                         uint64
	Symbol                     string
	Price4, Size, TS, Notional int64
	Name, Sector, Currency     string
	Lots                       int64
}

var sizeColumns = []string{"id", "symbol", "price4", "size", "ts", "notional", "name", "sector", "currency", "lots"}

func sizeRowValues(r sizeRow) []any {
	return []any{r.ID, r.Symbol, r.Price4, r.Size, r.TS, r.Notional, r.Name, r.Sector, r.Currency, r.Lots}
}

// sizeDDL is the columns of a table of sizeRows.
const sizeDDL = "id UInt64, symbol String, price4 Int64, size Int64, ts Int64, notional Int64, name String, sector String, currency String, lots Int64"

// sizeRows returns n rows of the demo's shape with ids 0..n-1.
func sizeRows(n int) []sizeRow {
	rows := make([]sizeRow, n)
	for i := range rows {
		rows[i] = sizeRow{ID: uint64(i), Symbol: "AAPL", Price4: 1_895_000 + int64(i%100), Size: int64(100 + i%900),
			TS: 1_700_000_000_000_000_000 + int64(i), Notional: 189_500_000, Name: "Apple Inc.", Sector: "Technology", Currency: "USD", Lots: 2}
	}
	return rows
}

// benchDB connects to the tests' server for a benchmark; the pool closes
// when it ends.
func benchDB(b *testing.B) *sql.DB {
	b.Helper()
	db, err := clickhousex.Open(context.Background(), needServer(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// recreate drops table and creates it again, empty, with the columns ddl.
func recreate(b *testing.B, db *sql.DB, table, ddl string) {
	b.Helper()
	for _, q := range []string{"DROP TABLE IF EXISTS " + table, "CREATE TABLE " + table + " (" + ddl + ") ENGINE = MergeTree ORDER BY id"} {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInsertSize measures one Writer.Write of n rows of the demo's
// shape per insert, for insert sizes from 100 to 32k rows, inserting at
// least 256k rows per size, and checks the count stored.
//
//	go test -run '^$' -bench InsertSize -benchtime 1x ./connect/clickhousex
func BenchmarkInsertSize(b *testing.B) {
	ctx := context.Background()
	db := benchDB(b)
	for _, size := range []int{100, 500, 1000, 2000, 4000, 8192, 16384, 32768} {
		b.Run(fmt.Sprintf("rows=%d", size), func(b *testing.B) {
			total := max(size, 256<<10/size*size)
			rows := sizeRows(total)
			var elapsed time.Duration
			for b.Loop() {
				b.StopTimer()
				recreate(b, db, "bench_size", sizeDDL)
				w := clickhousex.NewWriter(db, "bench_size", sizeColumns, sizeRowValues)
				b.StartTimer()
				t0 := time.Now()
				for i := 0; i < total; i += size {
					if err := w.Write(ctx, rows[i:i+size]); err != nil {
						b.Fatal(err)
					}
				}
				elapsed += time.Since(t0)
				b.StopTimer()
				if got, err := clickhousex.Count(ctx, db, "bench_size"); err != nil || got != int64(total) {
					b.Fatalf("stored %d rows, %v; want %d", got, err, total)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(total)*float64(b.N)/elapsed.Seconds(), "rows/s")
			b.ReportMetric(float64(elapsed.Microseconds())/float64(total/size*b.N), "µs/insert")
		})
	}
}

// BenchmarkInsertGather feeds an Insert stage at full speed with 1M rows
// of the demo's shape in chunks of 500 (the demo's store input): with
// Gather(500) every chunk is an insert of its own (the store before
// gathering); with more, the chunks that wait go in one insert, up to
// the Gather given; on 1, 2 or 4 inserts at once (SinkWorkers).
//
//	go test -run '^$' -bench InsertGather -benchtime 2x ./connect/clickhousex
func BenchmarkInsertGather(b *testing.B) {
	const n = 1 << 20
	ctx := context.Background()
	db := benchDB(b)
	rows := sizeRows(n)
	for _, c := range []struct{ gather, workers int }{{500, 2}, {4096, 2}, {16384, 1}, {16384, 2}, {16384, 4}, {32768, 2}} {
		b.Run(fmt.Sprintf("gather=%d/workers=%d", c.gather, c.workers), func(b *testing.B) {
			var elapsed time.Duration
			var inserts int64
			for b.Loop() {
				b.StopTimer()
				recreate(b, db, "bench_gather", sizeDDL)
				w := clickhousex.NewWriter(db, "bench_gather", sizeColumns, sizeRowValues, clickhousex.SinkWorkers(c.workers))
				b.StartTimer()
				t0 := time.Now()
				p := sluice.New(ctx)
				clickhousex.Insert(p, "store", sluice.FromSlice(p, "rows", rows, sluice.Chunk(500)), w, sluice.Gather(c.gather))
				if err := p.Wait(); err != nil {
					b.Fatal(err)
				}
				elapsed += time.Since(t0)
				b.StopTimer()
				if got, err := clickhousex.Count(ctx, db, "bench_gather"); err != nil || got != n {
					b.Fatalf("stored %d rows, %v; want %d", got, err, n)
				}
				inserts += w.Stats().Batches
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/elapsed.Seconds(), "rows/s")
			b.ReportMetric(float64(n)*float64(b.N)/float64(inserts), "rows/insert")
		})
	}
}
