// Package sluice builds fast, observable, leak-free concurrent pipelines.
//
// A pipeline is a [Pipeline] scope and a graph of stages joined by
// [Stream]s. Users write per-item functions; sluice moves items between
// goroutines in chunks, so that a hop between stages costs a few
// nanoseconds per item instead of a channel operation (~50–200 ns).
//
//	p := sluice.New(ctx)
//	src := sluice.FromSlice(p, "events", events)
//	dec := sluice.Map(p, "decode", src, 4, decode)         // 4 workers, unordered
//	ord := sluice.OrderedMap(p, "enrich", dec, 4, enrich)  // 4 workers, input order kept
//	bat := sluice.Batch(p, "collect", ord, 500, 50*time.Millisecond)
//	sluice.ForEach(p, "write", bat, 2, write)
//	err := p.Wait()
//
// # Ownership and lifetime
//
// Every stage function starts its goroutines at once and returns its
// output stream. The scope owns those goroutines: [Pipeline.Wait] returns
// only after every one of them has exited, and after it returns none of the
// scope's goroutines runs. Stage functions must be called before Wait.
// Each stream is consumed by exactly one stage; a stream consumed twice, or
// used with another pipeline, panics when the stage is built, and a stream
// that nothing consumes makes Wait panic (it would block its producer
// forever).
//
// # Cancellation and errors
//
// The first error returned by a stage's function, or the first panic in one,
// cancels the scope's context (passed to every function that can block).
// Every stage then stops: sources stop generating, blocked sends and
// receives return, and items still queued are abandoned. Wait returns that
// first error — a [*StageError] naming the stage, or a [*PanicError] with the
// panic value and stack — or, if the parent context was cancelled before
// every goroutine had exited, the parent's cause. Later errors are dropped,
// and so is an error a function returns, a panic it raises or a Goexit it
// calls after the stop (such as ctx.Err() from a function that saw the
// cancellation): it is an echo of the stop, not news. A stage function that calls runtime.Goexit (t.FailNow or t.Fatal
// in a test) fails the pipeline with an error wrapping [ErrGoexit].
//
// A stop is noticed at once: a failure raises the scope's halt flag before
// it cancels the context, and a cancelled parent raises it from a
// context.AfterFunc callback, microseconds after the cancel. Every stage
// checks the flag before each call of a user function, so once the flag is
// up no user function is called again — even in the middle of a chunk;
// calls already running finish. A [From] generator is one call: its
// [Emitter.Send] returns false from the next chunk boundary on, and its
// context is done.
//
// # Failed items, retries and timeouts
//
// By default an error from a stage's function fails the pipeline. Stages
// whose function returns an error ([Map], [OrderedMap], [Filter],
// [FlatMap], [ForEach], [ForEachChunk]) take options that settle a failed
// item on its own instead: [SkipErrors] drops and counts it, [DeadLetter]
// routes it, as a [Failed] item carrying the error, the stage and the
// attempts, to a stream the user consumes like any other (and must
// consume: no failure is dropped silently). [Retry] calls the function
// again, with exponential backoff and full jitter, unless the error is
// marked [Permanent]; [Timeout] gives each call a deadline. A
// [ForEachChunk] function that stored some of a call's items and not
// others returns [ItemErrors], and only the failed ones are retried and
// settled. Failed items and retries are counted per stage
// (StageStats.Failed, Retries). The happy path costs nothing extra: the
// policy runs only when a call fails.
//
// # Draining
//
// [Pipeline.Drain] (or [Pipeline.DrainOn] a context, such as one that
// signal.NotifyContext cancels on SIGTERM) stops the sources from taking
// new input and lets what they took finish: every stage processes it,
// sinks consume it, and Wait returns nil. Nothing taken is lost,
// duplicated or, where order is promised, reordered. A [From] generator
// sees [Emitter.Done] closed at once and Send return false from the next
// chunk boundary on: a chunk filling, or a Flush (what Send took until
// then goes through too).
// Cancelling the context during a drain aborts as usual.
//
// A drain is bounded: [Retry] backoffs go on for the pipeline's
// [DrainGrace] ([DefaultDrainGrace] unless set) from the moment the drain
// begins, and then end; a failed call is not retried after that. Each
// item whose retries ended so is settled by its stage's policy with its
// last error, as if its attempts had run out: dead-lettered with
// [DeadLetter], dropped and counted with [SkipErrors]; with neither, it
// fails the pipeline, and Wait returns a [*StageError] naming the stage
// and wrapping that error (items still on their way are then abandoned,
// as at any failure). Calls already running are not cut short; [Timeout]
// bounds them.
//
// # Settling messages from a broker
//
// Delivery from a broker is at least once: a message is acknowledged only
// after everything derived from it is stored. The contract is the core's,
// the same for every connector: a source hands each message out with a
// [Receipt], items derived from it carry the receipt (by embedding it:
// any [Carrier]), and the engine settles it wherever it decides an item's
// fate. A sink ([ForEach], [ForEachChunk]) acknowledges each item once its
// function returned nil for it, so any connector's writer settles any
// connector's input; an item that [Filter] drops, [SkipErrors] skips or an
// [OnFull] policy discards is acknowledged; a dead letter carries its
// item's receipt to the dead-letter stream's sink; [FlatMap] and
// [Broadcast] hold the receipt once per result or copy. A batch ([Batch],
// any slice of carriers) settles every receipt in it. Items abandoned by
// a failed or cancelled pipeline are not settled: the broker delivers
// them again. See [Receipt] for the whole list.
//
// # Ordering
//
// A stage with one worker keeps the order of its input. [Map], [Filter],
// [FlatMap] and [ForEach] with n > 1 workers do not; [OrderedMap] does, with
// a bounded reorder window. [Merge] interleaves its inputs. [Partition] keeps
// the order of items with the same key.
//
// # Batching and latency
//
// An edge carries chunks of up to [DefaultChunk] items (fewer for large
// elements). A stage sends its partial output chunk whenever it would
// otherwise wait for input, so a lone item travels at once (low latency
// when idle) and a flood travels in full chunks (high throughput under
// load). A stage that is busy with slow items and never waits for input
// hands on output it has held for 200 µs after each input chunk. Both
// rules hold for every output of a stage: each output of [Partition] and
// [Broadcast], and a stage's [DeadLetter] stream as much as its main
// output. A [From]
// generator's items are sent when a chunk fills, when it calls
// [Emitter.Flush], or when it returns. Chunks are recycled, not
// allocated per send. [Batch] is different: it forms user-visible batches by
// size and maximum wait; [ForEachChunk] hands a sink each chunk as it comes
// (with [Gather], every chunk waiting, so a sink that falls behind makes
// fewer, larger calls).
//
// A chunk is also the grain of parallelism: a worker takes a whole chunk.
// So the size of the chunks on an edge adapts to the stage that consumes
// it: each worker measures the time it spends on a chunk (not counting its
// waits) and sets the size for the chunks its producer fills next, so that
// one chunk is about 50 µs of work — up to [DefaultChunk] items when items
// are cheap (per-chunk costs vanish), one item when each takes 50 µs or
// more (slow items spread over every worker). An edge starts at one item
// per chunk, so that a handful of slow items is spread over every worker
// from the first; the first chunk measured sets a larger size at once, so
// a flood of cheap items reaches full chunks within a few chunks. A
// smaller size is taken after four slow chunks in a row, so one chunk
// slowed by preemption does not shrink a fast stage's chunks, or at once
// after a chunk a hundred times over budget. [Chunk] fixes
// the size instead. The inputs of [ForEachChunk] (whose cost is per call)
// and [Batch] (which regroups items) carry full chunks; [Merge] passes
// chunks on whole, so its inputs are sized by the stage after it; the
// input of [OrderedMap] stays small enough that its [Window] holds two
// chunks per worker, and no larger than its output's chunks.
//
// # Worker counts
//
// A stage with a pool runs the n workers it is given, or, with [Auto],
// a count the engine chooses between two bounds while it runs: more while
// the stage is the bottleneck and more workers bring more throughput,
// fewer when they bring none or the time per call climbs. Workers added at
// run time are owned like every other; a worker removed exits between two
// chunks, so no item is lost or repeated. [Throttle] paces a stage's calls
// by a limiter, whatever its count.
//
// # Backpressure and overflow
//
// Edges are bounded ([Buffer]; by default 8 chunks). By default a
// stage whose output is full waits ([Block]), so a slow stage slows its
// producers. [OnFull] with [DropNewest] or [DropOldest] makes a stage discard
// instead; every discarded item is counted.
//
// # Observability
//
// Each stage keeps per-goroutine counters — items in and out, drops,
// failed items and retries, time busy and blocked — and each edge its queue depth and capacity, updated per
// chunk rather than per item so that counting never becomes a shared hot
// spot. [Pipeline.Stats] reads them all at any time.
package sluice
