// Package clickhousex writes the items of sluice pipelines to ClickHouse in
// batch inserts, through database/sql and the native protocol
// (github.com/ClickHouse/clickhouse-go v1, which speaks to servers as old
// as Debian's 18.16).
//
//	db, err := clickhousex.Open(ctx, "127.0.0.1:9000", clickhousex.Database("market"))
//	type Trade struct {
//		sluice.Receipt // of the message it was decoded from
//		TS             time.Time
//		Symbol         string
//		Price          float64
//	}
//	w := clickhousex.NewWriter(db, "trades", []string{"ts", "symbol", "price"},
//		func(t Trade) []any { return []any{t.TS, t.Symbol, t.Price} })
//	p := sluice.New(ctx)
//	trades := sluice.Map(p, "decode", msgs, 4, decode) // Trade{Receipt: m.Receipt, …}
//	clickhousex.Insert(p, "store", trades, w, sluice.Retry(5, 50*time.Millisecond, 2*time.Second))
//	err = p.Wait()
//
// # Typed columns
//
// [NewWriter] takes a function that returns an item's values as a []any,
// which costs a slice and a boxed value per row, and their conversion.
// [NewColumnWriter] takes the columns typed instead — [UInt64Column],
// [Int64Column], [Float64Column], [StringColumn], each with a function that
// reads its value from an item — and appends each value straight to the
// insert's block, checking the columns' types against the table's at every
// insert. It spends less client CPU per row (BenchmarkWriterCPU measures
// both; the figures are in docs/performance.md):
//
//	w := clickhousex.NewColumnWriter(db, "trades", []clickhousex.Column[Trade]{
//		clickhousex.StringColumn("symbol", func(t *Trade) string { return t.Symbol }),
//		clickhousex.Float64Column("price", func(t *Trade) float64 { return t.Price }),
//	})
//
// # Batches and commits
//
// [Insert] writes the items that reach it in inserts of up to
// [DefaultGather] rows: each insert takes every item waiting in the
// stage's input (one row when input trickles, everything that gathered
// while the last insert ran under load; see [sluice.Gather]).
// [InsertBatches] does the same with the batches of a [sluice.Batch]
// stage, for a size and a maximum wait of your choosing, joining the
// batches that wait. Either way a store that falls behind inserts fewer,
// larger blocks, and an idle one inserts each chunk or batch at once (no
// timer). An insert is one transaction — BEGIN, one prepared INSERT,
// COMMIT, which the server stores as one block (up to a million rows) —
// committed before its goroutine takes more input; [SinkWorkers] inserts
// run at once.
//
// # Settling
//
// clickhousex takes a *sql.DB ([Open] makes one) and has no source: it
// stores items that came from any connector's messages. An item type that
// embeds the [sluice.Receipt] of its message (any [sluice.Carrier]) is
// settled by the insert stage once its batch has committed, never before:
// the message is acknowledged, or its offset committed, only after its row
// is stored. [Writer.Write] itself settles nothing, so a stage of your own
// that calls it settles what it stored — or leaves it to the core, as
// [sluice.ForEach] and [sluice.ForEachChunk] do.
//
// # Failures
//
// An insert that fails — server unreachable, table missing — fails the
// pipeline with an error naming the table and the number of rows, unless
// the stage's error options settle it: with [sluice.Retry] the whole
// insert is tried again after a backoff; then [sluice.DeadLetter] or
// [sluice.SkipErrors] settles every item of it. A row with a value the
// driver cannot convert is left out of the insert and settled alone, with
// an error marked [sluice.Permanent] (retrying will not help); the other
// rows are inserted without it. A commit whose answer was lost may have
// stored its rows even though it reported an error, so a retried insert
// may be stored twice: delivery is at least once. Use a table engine that
// removes duplicates (ReplacingMergeTree) or count distinct keys where
// that matters.
//
// # Logs and traces
//
// [Logger] (a [WriterOption]) makes a Writer log to a *slog.Logger, every
// line with the "table": dead pooled connections replaced (Info), failed
// inserts, rows left out for their values, and inserts slower than
// [SlowInsert] (Warn) — each kind counted ("count") and written at most
// once per [sluice.LogInterval], the first at once and what is left when
// the stage's pipeline ends, never a line per row (see Logger for the
// table). The password is never logged.
//
// An insert is one call of the stage's function, so a pipeline with
// [sluice.Tracing] makes one span per insert, linked to the trace of the
// message behind each of its items (see [sluice.Receipt.WithTrace]; a
// source such as natsx's or kafkax's with its Propagate option attaches
// them):
//
//	w := clickhousex.NewWriter(db, "trades", cols, row, clickhousex.Logger(log))
//	p := sluice.New(ctx, sluice.Tracing(otelx.NewTracer(provider)), sluice.Logger(log))
package clickhousex
