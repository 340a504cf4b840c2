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
// # Batches and commits
//
// [Insert] writes each chunk that reaches it, as many items as were ready
// up to the producer's chunk size (one row when input trickles, full
// chunks under load; set the producer's [sluice.Chunk] for chunks larger
// than 16 KiB of items). [InsertBatches] writes each batch of a
// [sluice.Batch] stage, for a size and a maximum wait of your choosing.
// Either way, calls of [Writer.Write] that wait while the writer's
// [SinkWorkers] inserts are busy go into the next insert together, up to
// [MaxRows] rows: a store that falls behind inserts fewer, larger blocks,
// and an idle one inserts each chunk or batch at once (no timer). An
// insert is one transaction — BEGIN, one prepared INSERT, COMMIT, which
// the server stores as one block (up to a million rows) — committed
// before the goroutines whose rows it holds take their next input.
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
// A batch that fails — server unreachable, table missing, a value the
// column does not take — fails the pipeline with an error naming the table
// and the number of rows, unless the stage's error options settle it: with
// [sluice.Retry] the whole batch is inserted again after a backoff; then
// [sluice.DeadLetter] or [sluice.SkipErrors] settles every item of it. A
// value the driver cannot convert is marked [sluice.Permanent] (retrying
// will not help). A commit whose answer was lost may have stored its rows
// even though it reported an error, so a retried batch may be stored twice:
// delivery is at least once. Use a table engine that removes duplicates
// (ReplacingMergeTree) or count distinct keys where that matters.
package clickhousex
