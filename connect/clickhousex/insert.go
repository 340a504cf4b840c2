package clickhousex

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

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
	log     *slog.Logger
	slow    time.Duration
}

// DefaultGather is the most rows one insert of an [Insert] or
// [InsertBatches] stage holds (the core's [sluice.Gather]; give the stage
// another to change it). The choice is measured in docs/performance.md:
// ClickHouse stores rows far faster in blocks of thousands than of
// hundreds, and past about 16k rows a block gains little.
const DefaultGather = 16384

// DefaultSinkWorkers is how many inserts an [Insert] or [InsertBatches]
// stage runs at once unless [SinkWorkers] says otherwise: one commits
// while the other is encoded.
const DefaultSinkWorkers = 2

type writerOptionFunc func(*writerConfig)

func (f writerOptionFunc) applyWriter(c *writerConfig) { f(c) }

// SinkWorkers sets how many goroutines an [Insert] or [InsertBatches]
// stage runs, each running one insert at a time on a connection of its
// own (default [DefaultSinkWorkers]). With more than one, batches commit
// in no particular order. Panics if n < 1.
func SinkWorkers(n int) WriterOption {
	if n < 1 {
		panic(fmt.Sprintf("clickhousex: SinkWorkers must be ≥ 1, got %d", n))
	}
	return writerOptionFunc(func(c *writerConfig) { c.workers = n })
}

// Writer inserts items of type T into one table, a batch per transaction.
// Create one with [NewWriter] or [NewColumnWriter]; add it to a pipeline with [Insert] or
// [InsertBatches], or call [Writer.Write]. One Writer may serve several
// stages and pipelines at once.
type Writer[T any] struct {
	db      *sql.DB
	table   string
	query   string
	columns int
	row     func(T) []any // NewWriter's, else nil
	cols    []Column[T]   // NewColumnWriter's, else nil
	workers int
	log     *writerLog // nil without a Logger

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
	if row == nil {
		panic("clickhousex: NewWriter: nil row function")
	}
	w := newWriter[T]("NewWriter", db, table, columns, opts)
	w.row = row
	return w
}

// newWriter is the Writer of a constructor (named fn in its panics)
// without its way of making rows.
func newWriter[T any](fn string, db *sql.DB, table string, columns []string, opts []WriterOption) *Writer[T] {
	switch {
	case db == nil:
		panic(fmt.Sprintf("clickhousex: %s: nil *sql.DB", fn))
	case strings.TrimSpace(table) == "":
		panic(fmt.Sprintf("clickhousex: %s: empty table name", fn))
	case len(columns) == 0:
		panic(fmt.Sprintf("clickhousex: %s %s: no columns", fn, table))
	}
	cfg := writerConfig{workers: DefaultSinkWorkers, slow: DefaultSlowInsert}
	for _, o := range opts {
		if o == nil {
			panic("clickhousex: nil WriterOption")
		}
		o.applyWriter(&cfg)
	}
	return &Writer[T]{
		db:      db,
		table:   table,
		query:   fmt.Sprintf("INSERT INTO %s (%s) VALUES", table, strings.Join(columns, ", ")),
		columns: len(columns),
		workers: cfg.workers,
		log:     newWriterLog(cfg.log, table, cfg.slow),
	}
}

// WriterStats counts what a [Writer] has done since it was created.
type WriterStats struct {
	Rows    int64 // rows committed
	Batches int64 // inserts committed
	Failed  int64 // inserts that failed (each try of a retried batch counts)
}

// Stats returns the writer's counts. It is safe to call at any time.
func (w *Writer[T]) Stats() WriterStats {
	return WriterStats{Rows: w.rows.Load(), Batches: w.batches.Load(), Failed: w.failed.Load()}
}

// Write inserts rows in one transaction and returns once they are
// committed. An empty rows does nothing. When the driver rejects a value
// (one it cannot convert to its column's type), the rows are inserted
// again without the row that holds it, and so on for each such row; the
// error is then a [sluice.ItemErrors] naming the rows left out, each with
// an error marked [sluice.Permanent] (retrying will not help), so that an
// [Insert] stage dead-letters or skips only those rows. Any other error
// fails the whole call: nothing of rows was committed, or — when the
// commit's answer was lost — possibly everything (see the package doc).
// Write settles nothing: the stage that calls it does ([Insert]), or the
// caller.
func (w *Writer[T]) Write(ctx context.Context, rows []T) error {
	return w.leftOut(insertLeavingOut(rows, func(rows []T) (int, error) {
		_, r, err := w.insert(ctx, [][]T{rows})
		return r, err
	}))
}

// writeBatches inserts batches in one transaction; a batch that holds a
// value the driver rejects is left out, as Write leaves out a row.
func (w *Writer[T]) writeBatches(ctx context.Context, batches [][]T) error {
	return w.leftOut(insertLeavingOut(batches, func(batches [][]T) (int, error) {
		b, _, err := w.insert(ctx, batches)
		return b, err
	}))
}

// leftOut logs the units err says were left out, and returns err.
func (w *Writer[T]) leftOut(err error) error {
	if w.log == nil || err == nil {
		return err
	}
	if errs, ok := err.(sluice.ItemErrors); ok {
		for _, e := range errs {
			if e != nil {
				w.log.left.Add(1, slog.String("error", e.Error()))
			}
		}
	}
	return err
}

// insertLeavingOut calls insert with units (rows, or batches of rows)
// until it succeeds or fails for a reason other than a value of one unit
// (bad < 0): each such unit is left out of the next call. It returns nil,
// the error of the whole call, or a sluice.ItemErrors of the units left
// out. units itself is never modified: the stage reads it afterwards.
func insertLeavingOut[U any](units []U, insert func(us []U) (bad int, err error)) error {
	if len(units) == 0 {
		return nil
	}
	cur := units
	var at []int // at[i] is the index in units of cur[i], once one is left out
	var errs sluice.ItemErrors
	for len(cur) > 0 {
		bad, err := insert(cur)
		if err == nil {
			break
		}
		if bad < 0 {
			return err
		}
		if errs == nil {
			errs = make(sluice.ItemErrors, len(units))
			cur = slices.Clone(units)
			at = make([]int, len(units))
			for i := range at {
				at[i] = i
			}
		}
		errs[at[bad]] = err
		cur = slices.Delete(cur, bad, bad+1)
		at = slices.Delete(at, bad, bad+1)
	}
	if errs == nil {
		return nil
	}
	return errs
}

// insert writes the rows of parts in one transaction and counts it. When
// the driver rejects a value, it returns its row's part and index in the
// part (else -1, -1).
func (w *Writer[T]) insert(ctx context.Context, parts [][]T) (part, row int, err error) {
	n := 0
	for _, rows := range parts {
		n += len(rows)
	}
	var start time.Time
	if w.log != nil {
		start = time.Now()
	}
	part, row, err = w.write(ctx, parts, n)
	if w.log != nil {
		w.log.inserted(n, time.Since(start), err, row >= 0)
	}
	if err != nil {
		w.failed.Add(1)
		return part, row, err
	}
	w.rows.Add(int64(n))
	w.batches.Add(1)
	return -1, -1, nil
}

// Insert starts a sink stage of [SinkWorkers] goroutines that insert the
// items of in with w: each insert takes every item waiting in the stage's
// input, up to [DefaultGather] rows (natural batching, see
// [sluice.ForEachChunk] and [sluice.Gather]). A store that keeps up
// inserts each chunk as it arrives; one that falls behind inserts fewer,
// larger blocks, which ClickHouse stores far faster per row. Once an
// insert commits, the core settles the receipt of every item that carries
// one (see [sluice.Receipt]): an item type that embeds the receipt of the
// message it came from is committed to ClickHouse before that message is
// acknowledged. A failed insert fails the pipeline unless opts settle it
// ([sluice.Retry] inserts it again; [sluice.DeadLetter] gets a
// [sluice.Failed] per item; [sluice.SkipErrors]); a row with a value the
// driver rejects is left out of the insert and settled alone (see
// [Writer.Write]). The writer's counts ([Writer.Stats]) are the stage's
// [sluice.StageStats].Connector (the first such stage's, when several
// stages of p share the writer), so an exporter of the pipeline shows them
// (the sluice.clickhouse.writer metrics).
func Insert[T any](p *sluice.Pipeline, name string, in sluice.Stream[T], w *Writer[T], opts ...sluice.StageOption) {
	if w == nil {
		panic(fmt.Sprintf("clickhousex: Insert %q: nil Writer", name))
	}
	w.log.flushAtEnd(p)
	sluice.ForEachChunk(p, name, in, w.workers, w.Write, gathered(opts)...)
	w.attach(p, name)
}

// InsertBatches starts a sink stage of [SinkWorkers] goroutines that
// insert the batches of in (from [sluice.Batch], say) with w: each insert
// takes the batches waiting, up to [DefaultGather] rows in all (a larger
// batch goes alone), so a busy store inserts fewer, larger blocks and an
// idle one each batch at once. Once an insert commits, the core settles
// the receipts of its items. A failed insert fails the pipeline unless
// opts settle it; [sluice.DeadLetter] then gets one [sluice.Failed] per
// batch. A batch with a value the driver rejects is left out of the
// insert and settled alone.
func InsertBatches[T any](p *sluice.Pipeline, name string, in sluice.Stream[[]T], w *Writer[T], opts ...sluice.StageOption) {
	if w == nil {
		panic(fmt.Sprintf("clickhousex: InsertBatches %q: nil Writer", name))
	}
	w.log.flushAtEnd(p)
	sluice.ForEachChunk(p, name, in, w.workers, w.writeBatches, gathered(opts)...)
	w.attach(p, name)
}

// gathered puts the default Gather before opts, which may override it.
func gathered(opts []sluice.StageOption) []sluice.StageOption {
	return append([]sluice.StageOption{sluice.Gather(DefaultGather)}, opts...)
}
