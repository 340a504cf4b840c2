//go:build unix

package clickhousex_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connect/clickhousex"
)

// BenchmarkWriterCPU compares the client's CPU per row (this process's
// user and system time, getrusage) of NewWriter's []any rows and
// NewColumnWriter's typed columns, in inserts of 500 rows of the demo's
// shape (its store's input batch) and of 16384 (the most an Insert stage
// gathers), 256k rows per op.
//
//	go test -run '^$' -bench WriterCPU -benchtime 3x ./connect/clickhousex
func BenchmarkWriterCPU(b *testing.B) {
	const total = 1 << 18
	ctx := context.Background()
	db := benchDB(b)
	rows := sizeRows(total)
	writers := map[string]func() *clickhousex.Writer[sizeRow]{
		"rows": func() *clickhousex.Writer[sizeRow] {
			return clickhousex.NewWriter(db, "bench_cpu", sizeColumns, sizeRowValues)
		},
		"columns": func() *clickhousex.Writer[sizeRow] {
			return clickhousex.NewColumnWriter(db, "bench_cpu", sizeRowColumns)
		},
	}
	for _, c := range []struct {
		writer string
		size   int
	}{{"rows", 500}, {"columns", 500}, {"rows", 16384}, {"columns", 16384}} {
		b.Run(fmt.Sprintf("%s/size=%d", c.writer, c.size), func(b *testing.B) {
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				recreate(b, db, "bench_cpu", sizeDDL)
				w := writers[c.writer]()
				b.StartTimer()
				c0 := processCPU()
				for i := 0; i < total; i += c.size {
					if err := w.Write(ctx, rows[i:min(total, i+c.size)]); err != nil {
						b.Fatal(err)
					}
				}
				cpu += processCPU() - c0
				b.StopTimer()
				if n, err := clickhousex.Count(ctx, db, "bench_cpu"); err != nil || n != total {
					b.Fatalf("%d rows stored (%v), want %d", n, err, total)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(total*b.N), "cpu-ns/row")
		})
	}
}

var sizeRowColumns = []clickhousex.Column[sizeRow]{
	clickhousex.UInt64Column("id", func(r *sizeRow) uint64 { return r.ID }),
	clickhousex.StringColumn("symbol", func(r *sizeRow) string { return r.Symbol }),
	clickhousex.Int64Column("price4", func(r *sizeRow) int64 { return r.Price4 }),
	clickhousex.Int64Column("size", func(r *sizeRow) int64 { return r.Size }),
	clickhousex.Int64Column("ts", func(r *sizeRow) int64 { return r.TS }),
	clickhousex.Int64Column("notional", func(r *sizeRow) int64 { return r.Notional }),
	clickhousex.StringColumn("name", func(r *sizeRow) string { return r.Name }),
	clickhousex.StringColumn("sector", func(r *sizeRow) string { return r.Sector }),
	clickhousex.StringColumn("currency", func(r *sizeRow) string { return r.Currency }),
	clickhousex.Int64Column("lots", func(r *sizeRow) int64 { return r.Lots }),
}

// processCPU is this process's CPU time so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
