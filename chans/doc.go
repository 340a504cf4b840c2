// Package chans has tools for plain Go channels: Merge (fan-in), ElasticChan
// (an unbounded channel: In and Out joined by a relay goroutine), Elastic (a
// queue with no fixed bound used through methods, optionally limited, also
// usable as a channel), and
// two overflow channels whose sends never block (DropNewestChan,
// DropOldestQueue) with drop counters and queue depths for metrics.
//
// Every goroutine the package starts is owned by the value or call that
// started it and has a documented exit: Merge's when the output closes,
// Elastic's when its input has ended and drained or Close is called. The
// overflow channels start none.
//
// Programmer errors (a nil input, a capacity below one or too large to
// allocate, a send after Close)
// panic with a message starting "chans: "; everything else is a value or an
// error. Ordering: each tool keeps the order of values from one sender;
// Merge interleaves different inputs in no promised order.
//
// The costs stated in the doc comments are measured by the package
// benchmarks, against plain channels and against the designs each tool
// replaces, in the same run.
package chans
