package clickhousex

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/sluicehq/sluice"
)

// driverBlockRows is the driver's block size (its DSN's block_size, which
// Open leaves at the default): a batch of more rows is sent, and stored, as
// several blocks.
const driverBlockRows = 1000000

// WriterOption configures a [Writer].
type WriterOption interface{ applyWriter(*writerConfig) }

type writerConfig struct {
	workers int
}

type writerOptionFunc func(*writerConfig)

func (f writerOptionFunc) applyWriter(c *writerConfig) { f(c) }

// SinkWorkers sets how many goroutines of an [Insert] or [InsertBatches]
// stage insert at once, each on a connection of its own (1 unless set).
// With more than one, batches commit in no particular order. Panics if
// n < 1.
func SinkWorkers(n int) WriterOption {
	if n < 1 {
		panic(fmt.Sprintf("clickhousex: SinkWorkers must be ≥ 1, got %d", n))
	}
	return writerOptionFunc(func(c *writerConfig) { c.workers = n })
}

// Writer inserts items of type T into one table, a batch per transaction.
// Create one with [NewWriter]; add it to a pipeline with [Insert] or
// [InsertBatches], or call [Writer.Write]. One Writer may serve several
// stages and pipelines at once.
type Writer[T any] struct {
	db      *sql.DB
	table   string
	query   string
	columns int
	row     func(T) []any
	workers int

	rows    atomic.Int64
	batches atomic.Int64
	failed  atomic.Int64
}

// NewWriter returns a Writer that inserts into table (a name as SQL writes
// it: "trades" or "market.trades") the given columns, whose values for an
// item row returns, in the same order. It does not contact the server: a
// missing table or column is reported by the first insert. Panics if db or
// row is nil, table is empty, or there are no columns.
func NewWriter[T any](db *sql.DB, table string, columns []string, row func(T) []any, opts ...WriterOption) *Writer[T] {
	switch {
	case db == nil:
		panic("clickhousex: NewWriter: nil *sql.DB")
	case row == nil:
		panic("clickhousex: NewWriter: nil row function")
	case strings.TrimSpace(table) == "":
		panic("clickhousex: NewWriter: empty table name")
	case len(columns) == 0:
		panic(fmt.Sprintf("clickhousex: NewWriter %s: no columns", table))
	}
	cfg := writerConfig{workers: 1}
	for _, o := range opts {
		if o == nil {
			panic("clickhousex: nil WriterOption")
		}
		o.applyWriter(&cfg)
	}
	w := &Writer[T]{
		db:      db,
		table:   table,
		query:   fmt.Sprintf("INSERT INTO %s (%s) VALUES", table, strings.Join(columns, ", ")),
		columns: len(columns),
		row:     row,
		workers: cfg.workers,
	}
	return w
}

// WriterStats counts what a [Writer] has done since it was created.
type WriterStats struct {
	Rows    int64 // rows committed
	Batches int64 // batches committed
	Failed  int64 // batches that failed (each try of a retried batch counts)
}

// Stats returns the writer's counts. It is safe to call at any time.
func (w *Writer[T]) Stats() WriterStats {
	return WriterStats{Rows: w.rows.Load(), Batches: w.batches.Load(), Failed: w.failed.Load()}
}

// Write inserts rows in one transaction and returns once it committed.
// An empty rows does nothing. Write settles nothing: the stage that calls
// it does ([Insert], [InsertBatches]), or the caller. On error
// nothing was committed, or — when the commit's answer was lost — possibly
// everything: see the package doc. A value that the driver cannot convert
// gives an error marked [sluice.Permanent].
func (w *Writer[T]) Write(ctx context.Context, rows []T) error {
	if len(rows) == 0 {
		return nil
	}
	if err := w.write(ctx, rows); err != nil {
		w.failed.Add(1)
		return err
	}
	w.rows.Add(int64(len(rows)))
	w.batches.Add(1)
	return nil
}

func (w *Writer[T]) write(ctx context.Context, rows []T) error {
	fail := func(step string, err error) error {
		return fmt.Errorf("clickhousex: inserting %d rows into %s: %s: %w", len(rows), w.table, step, err)
	}
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return fail("begin", err)
	}
	// After Commit, Rollback does nothing; before, it releases the
	// connection. The prepared statement closes with the transaction.
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, w.query)
	if err != nil {
		return fail("prepare", err)
	}
	for i, v := range rows {
		args := w.row(v)
		if len(args) != w.columns {
			return sluice.Permanent(fail("row", fmt.Errorf("item %d has %d values for %d columns", i, len(args), w.columns)))
		}
		// The driver appends the row to the batch's block in memory, and
		// sends the block only when it holds driverBlockRows rows: an
		// error from any other row is about its values, and will recur.
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			err = fail(fmt.Sprintf("item %d", i), err)
			if (i+1)%driverBlockRows == 0 || ctx.Err() != nil {
				return err
			}
			return sluice.Permanent(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail("commit", err)
	}
	return nil
}

// Insert starts a sink stage of [SinkWorkers] goroutines that inserts the
// items of in with w, one transaction per chunk as it arrives (natural
// batching, see [sluice.ForEachChunk]): up to the producer's chunk size
// ([sluice.DefaultChunk] items, fewer for items over 8 bytes, so that a
// chunk stays near 16 KiB). ClickHouse stores each insert as a part and
// prefers few large ones: a batch costs the server milliseconds whatever
// its size, so give the producing stage [sluice.Chunk] (8192, say) when
// throughput matters. A chunk is committed before its worker takes the
// next one, and then the core settles the receipt of every item that
// carries one (see [sluice.Receipt]): an item type that embeds the receipt
// of the message it came from is committed to ClickHouse before that
// message is acknowledged. A failed
// chunk fails the pipeline unless opts settle it ([sluice.Retry] inserts
// the whole chunk again; [sluice.DeadLetter] gets a [sluice.Failed] per
// item; [sluice.SkipErrors]).
func Insert[T any](p *sluice.Pipeline, name string, in sluice.Stream[T], w *Writer[T], opts ...sluice.StageOption) {
	if w == nil {
		panic(fmt.Sprintf("clickhousex: Insert %q: nil Writer", name))
	}
	sluice.ForEachChunk(p, name, in, w.workers, w.Write, opts...)
}

// InsertBatches starts a sink stage of [SinkWorkers] goroutines that inserts
// each batch of in (from [sluice.Batch], say) with w in one transaction,
// committed before its worker takes the next batch; then the core settles
// the receipts its items carry. A failed batch fails
// the pipeline unless opts settle it; [sluice.DeadLetter] then gets one
// [sluice.Failed] per batch.
func InsertBatches[T any](p *sluice.Pipeline, name string, in sluice.Stream[[]T], w *Writer[T], opts ...sluice.StageOption) {
	if w == nil {
		panic(fmt.Sprintf("clickhousex: InsertBatches %q: nil Writer", name))
	}
	sluice.ForEach(p, name, in, w.workers, w.Write, opts...)
}
