// Package sluice builds concurrent pipelines: you write per-item
// functions, and sluice runs them in worker pools joined by bounded
// streams, owns every goroutine it starts, stops everything on the first
// error, and counts what passes through each stage.
//
//	p := sluice.New(ctx)
//	src := sluice.FromSlice(p, "events", events)
//	dec := sluice.Map(p, "decode", src, 4, decode)         // 4 workers, unordered
//	ord := sluice.OrderedMap(p, "enrich", dec, 4, enrich)  // 4 workers, input order kept
//	bat := sluice.Batch(p, "collect", ord, 500, 50*time.Millisecond)
//	sluice.ForEach(p, "write", bat, 2, write)
//	err := p.Wait()
//
// Items move between goroutines in recycled chunks, so a hop between
// stages costs a few nanoseconds per item instead of a channel operation.
//
// # The pieces
//
// A [Pipeline] (from [New]) is the scope: it owns every goroutine of its
// stages, and [Pipeline.Wait] returns once all have exited. Stages are
// functions of one shape, (p, name, input, workers, f, options…), each
// returning the [Stream] it produces; a stream has exactly one consumer.
//
//   - Sources: [From] (a generator with an [Emitter]), [FromSlice],
//     [FromSeq], [FromSeq2], [FromChan].
//   - Transforms: [Map], [OrderedMap], [Filter], [FlatMap] (n workers;
//     output order kept with one worker, or by [OrderedMap]); [Batch] and
//     [Unbatch].
//   - Routing: [Merge], [Partition] (same key, same stream), [Broadcast].
//   - State and time: [Keyed] (state per key, one owner per key) and
//     [Window] (tumbling, hopping or session windows by event time, with
//     a watermark per source partition, lateness and a late stream;
//     inputs settled once their windows are stored): docs/windows.md.
//   - Sinks: [ForEach], [ForEachChunk] (one call per chunk; with [Gather],
//     per every chunk waiting: natural batching for bulk writes),
//     [Reduce] and [Collect] (a [Result]), [ToChan], [ToSeq].
//
// Stage options ([StageOption]) set an edge's size ([Buffer], [Chunk]),
// what a full edge does ([OnFull] with [Block], [DropNewest],
// [DropOldest]), [OrderedMap]'s [Reorder] bound, the worker count's bounds
// ([Auto]), a rate ([Throttle] with a [Limiter]), and what happens to an
// item whose function fails: [Retry], [Timeout], [SkipErrors],
// [DeadLetter] (a stream of [Failed] items). Pipeline options ([Option]):
// [Named], [DrainGrace].
//
// # Errors, cancellation and draining
//
// The first error a function returns, or the first panic, cancels the
// pipeline: no user function is called after the stop is seen, and Wait
// returns a [*StageError] naming the stage, or a [*PanicError] with the
// stack. A cancelled parent context stops it too, and Wait returns the
// context's cause. A function that calls runtime.Goexit fails the pipeline
// with [ErrGoexit]. [Permanent] marks an error that [Retry] must not
// retry; a [ForEachChunk] function that stored part of a call returns
// [ItemErrors].
//
// [Pipeline.Drain] and [Pipeline.DrainOn] (SIGTERM) stop the sources from
// taking input and let everything taken finish; Wait then returns nil.
// Retries end [DrainGrace] after a drain begins.
//
// # Brokers
//
// A message from a broker carries a [Receipt] (made by its connector with
// [NewReceipt] and a [Settler]); items derived from it carry the receipt
// by embedding it (a [Carrier]), and the engine acknowledges it once what
// it became is stored, or as soon as a stage decides its fate. Delivery is
// at least once. The connectors are modules of their own:
// github.com/sluicehq/sluice/connect/kafkax, …/natsx, …/clickhousex.
//
// # Observing
//
// [Pipeline.Stats] returns a [Snapshot]: per stage ([StageStats]) items
// in and out, drops, failures, retries, workers busy and waiting, busy
// and blocked time, the input queue, a sampled latency [Histogram], and
// with Auto why the count last changed ([AutoStats]); per edge
// ([EdgeStats]) its depth and chunk size. The counters are per goroutine
// and updated per chunk. The dash package serves them as a live page;
// github.com/sluicehq/sluice/prom exports them to Prometheus.
//
// # Batching and latency
//
// A stream carries chunks of up to [DefaultChunk] items, recycled rather
// than allocated per send. A stage hands on its partial output chunk
// whenever it would otherwise wait for input — so a lone item travels at
// once and a flood travels in full chunks — and, when busy with slow
// items, what it has held for 200 µs; both rules hold for every output,
// dead letters included. A [From] generator's items go when a chunk
// fills, on [Emitter.Flush], or when it returns. [Batch] is different: it
// forms the batches you see, by size and maximum wait.
//
// A chunk is also the grain of parallelism: a worker takes a whole chunk.
// So the chunk size on an edge adapts to the stage that consumes it: each
// worker times its chunks and sets the size its producer fills next so
// that a chunk is about 50 µs of work — full chunks when items are cheap,
// one item when each takes 50 µs or more. An edge starts at one item per
// chunk and grows at the first measurement. [Chunk] fixes the size.
// Error options cost nothing until a call fails. When the work per item is
// cheaper than a hop, a plain loop is as fast: see the README.
//
// # Guides
//
// The contract in full — ownership, errors, draining, settling, ordering,
// batching, backpressure — is docs/contract.md in the repository; guides
// for getting started, failures, workers and rates, observing, brokers,
// services and a cookbook are in docs/ beside it:
// https://github.com/sluicehq/sluice/tree/main/docs.
package sluice
