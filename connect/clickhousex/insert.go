package clickhousex

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
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
	maxRows int
	gather  int
}

// DefaultMaxRows is the most rows a [Writer] puts in one insert when it
// gathers calls, unless [MaxRows] says otherwise (the choice is measured in
// docs/performance.md).
const DefaultMaxRows = 16384

// DefaultGather is how many goroutines of an [Insert] or [InsertBatches]
// stage hold input while its inserts run, per [SinkWorkers] insert,
// unless [Gather] says otherwise.
const DefaultGather = 16

type writerOptionFunc func(*writerConfig)

func (f writerOptionFunc) applyWriter(c *writerConfig) { f(c) }

// SinkWorkers sets how many inserts a [Writer] runs at once, each on a
// connection of its own (1 unless set); an [Insert] or [InsertBatches]
// stage runs [Gather] goroutines per insert. With more than one, batches
// commit in no particular order. Panics if n < 1.
func SinkWorkers(n int) WriterOption {
	if n < 1 {
		panic(fmt.Sprintf("clickhousex: SinkWorkers must be ≥ 1, got %d", n))
	}
	return writerOptionFunc(func(c *writerConfig) { c.workers = n })
}

// MaxRows caps the rows of one insert that gathers several calls of
// [Writer.Write] (DefaultMaxRows unless set): the calls waiting for an
// insert are joined, in arrival order, while their rows add up to at most
// n. A single call of more rows is inserted alone, whole. Panics if
// n < 1.
func MaxRows(n int) WriterOption {
	if n < 1 {
		panic(fmt.Sprintf("clickhousex: MaxRows must be ≥ 1, got %d", n))
	}
	return writerOptionFunc(func(c *writerConfig) { c.maxRows = n })
}

// Gather sets how many goroutines of an [Insert] or [InsertBatches] stage
// take input per [SinkWorkers] insert ([DefaultGather] unless set): while
// the inserts run, the others each hold a chunk (or a batch), and the next
// insert takes them all. Panics if n < 1.
func Gather(n int) WriterOption {
	if n < 1 {
		panic(fmt.Sprintf("clickhousex: Gather must be ≥ 1, got %d", n))
	}
	return writerOptionFunc(func(c *writerConfig) { c.gather = n })
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
	maxRows int
	gather  int

	// Calls of Write wait in queue for one of the workers insert slots
	// (slots holds a token per insert running); an insert takes the calls
	// at the head of the queue, up to maxRows rows.
	slots chan struct{}
	mu    sync.Mutex
	queue []*call[T]

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
	cfg := writerConfig{workers: 1, maxRows: DefaultMaxRows, gather: DefaultGather}
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
		maxRows: cfg.maxRows,
		gather:  cfg.gather,
		slots:   make(chan struct{}, cfg.workers),
	}
	return w
}

// WriterStats counts what a [Writer] has done since it was created.
type WriterStats struct {
	Rows    int64 // rows committed
	Batches int64 // inserts committed (one may hold several calls' rows)
	Failed  int64 // inserts that failed (each try of a retried batch counts)
}

// Stats returns the writer's counts. It is safe to call at any time.
func (w *Writer[T]) Stats() WriterStats {
	return WriterStats{Rows: w.rows.Load(), Batches: w.batches.Load(), Failed: w.failed.Load()}
}

// Write inserts rows and returns once they are committed. An empty rows
// does nothing. Calls from several goroutines share inserts: a call that
// finds one of the writer's [SinkWorkers] insert slots free inserts at
// once, with every call waiting before it; while all slots are busy,
// calls wait, and the next free slot inserts all the waiting calls' rows
// as one transaction, in arrival order, up to [MaxRows] rows (natural
// batching: no timer, so a lone call is inserted at once). rows must stay
// unchanged until Write returns. Write settles nothing: the stage that
// calls it does ([Insert], [InsertBatches]), or the caller. On error
// nothing of rows was committed, or — when the commit's answer was lost —
// possibly everything: see the package doc. A value that the driver
// cannot convert gives an error marked [sluice.Permanent]; when the
// insert held other calls' rows, each call is then inserted again alone,
// so that only the calls with bad values fail. An insert runs under the
// context of the call that runs it; when that context ends, the other
// calls' rows are inserted again, each under its own. If ctx ends while
// rows wait, Write returns ctx's error; once their insert has begun, it
// returns the insert's outcome.
func (w *Writer[T]) Write(ctx context.Context, rows []T) error {
	if len(rows) == 0 {
		return nil
	}
	c := &call[T]{rows: rows, res: make(chan result, 1)}
	w.mu.Lock()
	w.queue = append(w.queue, c)
	w.mu.Unlock()
	for {
		select {
		case r := <-c.res:
			return w.outcome(ctx, c, r)
		case w.slots <- struct{}{}:
			w.insertHead(ctx, c)
			<-w.slots
			w.mu.Lock()
			taken := c.taken
			w.mu.Unlock()
			if taken { // its insert is done or under way
				return w.outcome(ctx, c, <-c.res)
			}
		case <-ctx.Done():
			w.mu.Lock()
			if !c.taken {
				w.queue = slices.DeleteFunc(w.queue, func(q *call[T]) bool { return q == c })
				w.mu.Unlock()
				return fmt.Errorf("clickhousex: inserting %d rows into %s: waiting for an insert: %w", len(rows), w.table, context.Cause(ctx))
			}
			w.mu.Unlock()
			return w.outcome(ctx, c, <-c.res)
		}
	}
}

// call is one [Writer.Write] waiting for its rows to be inserted.
type call[T any] struct {
	rows  []T
	taken bool        // guarded by Writer.mu: an insert has taken it from the queue
	res   chan result // its insert's outcome, sent once
}

// result is the outcome of the insert that held a call.
type result struct {
	err   error
	alone bool // the insert held bad values of some call: insert again alone
}

// outcome is what a Write whose insert ended with r returns.
func (w *Writer[T]) outcome(ctx context.Context, c *call[T], r result) error {
	if !r.alone {
		return r.err
	}
	return w.insert(ctx, [][]T{c.rows}, len(c.rows))
}

// insertHead inserts the calls at the head of the queue, up to maxRows
// rows (at least one call), under the context of self (the call that runs
// it), and tells each its outcome.
func (w *Writer[T]) insertHead(ctx context.Context, self *call[T]) {
	w.mu.Lock()
	k, n := 0, 0
	for k < len(w.queue) && (k == 0 || n+len(w.queue[k].rows) <= w.maxRows) {
		w.queue[k].taken = true
		n += len(w.queue[k].rows)
		k++
	}
	group := slices.Clone(w.queue[:k])
	rest := copy(w.queue, w.queue[k:])
	clear(w.queue[rest:])
	w.queue = w.queue[:rest]
	w.mu.Unlock()
	if k == 0 {
		return
	}
	parts := make([][]T, k)
	for i, c := range group {
		parts[i] = c.rows
	}
	err := w.insert(ctx, parts, n)
	permanent := err != nil && k > 1 && sluice.IsPermanent(err)
	// An insert that failed because self's context ended is no failure of
	// the other calls' (another stage's, say): they insert alone, under
	// their own contexts.
	cancelled := err != nil && ctx.Err() != nil
	for _, c := range group {
		c.res <- result{err: err, alone: permanent || (cancelled && c != self)}
	}
}

// insert writes the rows of parts (n in all) in one transaction and
// counts it.
func (w *Writer[T]) insert(ctx context.Context, parts [][]T, n int) error {
	if err := w.write(ctx, parts, n); err != nil {
		w.failed.Add(1)
		return err
	}
	w.rows.Add(int64(n))
	w.batches.Add(1)
	return nil
}

func (w *Writer[T]) write(ctx context.Context, parts [][]T, n int) error {
	fail := func(step string, err error) error {
		return fmt.Errorf("clickhousex: inserting %d rows into %s: %s: %w", n, w.table, step, err)
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
	i := -1
	for _, rows := range parts {
		for _, v := range rows {
			i++
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
	}
	if err := tx.Commit(); err != nil {
		return fail("commit", err)
	}
	return nil
}

// Insert starts a sink stage that inserts the items of in with w, each
// chunk as it arrives (natural batching, see [sluice.ForEachChunk]): up to
// the producer's chunk size ([sluice.DefaultChunk] items, fewer for items
// over 8 bytes, so that a chunk stays near 16 KiB). The stage runs
// [SinkWorkers] × [Gather] goroutines, each taking a chunk and calling
// [Writer.Write]: while the writer's inserts are busy, the chunks the
// others hold wait, and the next insert takes them all, up to [MaxRows]
// rows — a busy stage inserts fewer, larger blocks, which ClickHouse
// stores far faster per row; an idle one inserts each chunk at once.
// A chunk is committed before its goroutine takes the next one, and then
// the core settles the receipt of every item that carries one (see
// [sluice.Receipt]): an item type that embeds the receipt of the message
// it came from is committed to ClickHouse before that message is
// acknowledged. A failed chunk fails the pipeline unless opts settle it
// ([sluice.Retry] inserts the chunk again; [sluice.DeadLetter] gets a
// [sluice.Failed] per item; [sluice.SkipErrors]).
func Insert[T any](p *sluice.Pipeline, name string, in sluice.Stream[T], w *Writer[T], opts ...sluice.StageOption) {
	if w == nil {
		panic(fmt.Sprintf("clickhousex: Insert %q: nil Writer", name))
	}
	sluice.ForEachChunk(p, name, in, w.Goroutines(), w.Write, opts...)
}

// InsertBatches starts a sink stage of [SinkWorkers] × [Gather] goroutines
// that inserts the batches of in (from [sluice.Batch], say) with w: each
// goroutine takes a batch and calls [Writer.Write], so the batches that
// wait while the writer's inserts are busy go in the next insert
// together, up to [MaxRows] rows; an idle stage inserts each batch at
// once. A batch is committed before its goroutine takes the next one; then
// the core settles the receipts its items carry. A failed batch fails the
// pipeline unless opts settle it; [sluice.DeadLetter] then gets one
// [sluice.Failed] per batch.
func InsertBatches[T any](p *sluice.Pipeline, name string, in sluice.Stream[[]T], w *Writer[T], opts ...sluice.StageOption) {
	if w == nil {
		panic(fmt.Sprintf("clickhousex: InsertBatches %q: nil Writer", name))
	}
	sluice.ForEach(p, name, in, w.Goroutines(), w.Write, opts...)
}

// Goroutines returns how many goroutines [Insert] and [InsertBatches]
// start for w: [SinkWorkers] × [Gather]. A stage of your own that calls
// [Writer.Write] gathers as they do with as many.
func (w *Writer[T]) Goroutines() int { return w.workers * w.gather }
