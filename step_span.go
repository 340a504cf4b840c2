package sluice

import "context"

// spanStep starts a span with the pipeline's Tracer around each call of a
// stage on an item (or a chunk, or a batch), retries included: the
// outermost step. The span continues the trace of the item: its
// receipt's (see Receipt.WithTrace), or else the one its source started
// and the stages before carried beside it (see traceSlot); a call on
// several items links their traces instead. Every stage with a function
// has it when the pipeline was given [Tracing]; without, no chain is
// built for it and nothing is allocated.
type spanStep struct{ t Tracer }

func (spanStep) rank() int { return rankSpan }

func (s spanStep) wrap(next call, at *site) call {
	base := Call{Pipeline: at.p.name, Stage: at.s.name, Kind: at.s.kind.String()}
	var traces []context.Context // reused by every call of this worker
	collect := func(r Receipt) {
		if tr := r.Trace(); tr != nil {
			traces = append(traces, tr)
		}
	}
	var first Receipt // the item's receipt, for a call on one item
	describe := func(r Receipt) {
		if first.IsZero() {
			first = r
		}
	}
	// The retries this worker made before the call: the call's attempts
	// are one more than those it makes.
	var before int64
	base.Attempts = func() int { return int(1 + at.w.retries.Load() - before) }
	w := at.w
	return func(ctx context.Context) error {
		traces = traces[:0]
		at.receipts(collect)
		if at.chunked {
			if len(traces) == 0 {
				traces = appendTraces(traces, w.tin[w.ti:]...)
			}
		} else {
			// A call on one item takes the next trace of the input
			// chunk's: the stage calls its chain once per item, in order.
			var slot context.Context
			if w.ti < len(w.tin) {
				slot = w.tin[w.ti]
				w.ti++
			}
			w.trace = slot // what the call sends on continues it
			if len(traces) == 0 {
				traces = appendTraces(traces, slot)
			}
		}
		c := base
		c.Items = at.items()
		switch {
		case c.Items == 1 && len(traces) == 1:
			c.Parent = traces[0]
		case len(traces) > 0:
			c.Links = traces
		}
		if c.Items == 1 {
			first = Receipt{}
			at.receipts(describe)
			c.Message, _ = first.Message()
		}
		before = at.w.retries.Load()
		ctx, end := s.t.Start(ctx, c)
		err := next(ctx)
		end(err)
		return err
	}
}

// traceSlot: when a pipeline traces, every chunk carries beside its items
// the trace of each (chunk.traces): the context its source's span began,
// or its message's, or nil when the tracer started nothing. A stage hands
// an item's trace on with what it makes of the item, through its
// worker's trace, which its senders stamp on each item they send:
//
//   - a stage with a function (Map, Filter, FlatMap, OrderedMap, ForEach):
//     the span step takes the item's trace from the input chunk's, in
//     order, and sets the worker's, so a result, a survivor, every
//     emitted item and a dead letter continue the input's trace;
//   - Merge hands chunks on whole, traces with them; Partition, Broadcast
//     and Unbatch set the worker's trace item by item;
//   - Batch gives a batch a traceSet of its items' traces, which a span
//     on the batch links (Unbatch hands each item its own again);
//   - Keyed carries each item's trace to its key's worker; Window gives
//     a window the trace of the item that opened it.
//
// Without Tracing, chunk.traces and every sender's tr are nil: a stage
// pays a nil check per item, and no trace is written or read.

// traceSet is the trace of an item made of several (a Batch's batch): the
// traces of its parts, which a span on it links. It is never handed to a
// Tracer: the span step unpacks it.
type traceSet struct {
	context.Context // Background: a traceSet is no context of its own
	traces          []context.Context
}

// newTraceSet returns the trace of an item made of items whose traces are
// trs, in order: nil when none of them has one. It keeps trs.
func newTraceSet(trs []context.Context) context.Context {
	for _, tr := range trs {
		if tr != nil {
			return &traceSet{context.Background(), trs}
		}
	}
	return nil
}

// appendTraces appends the traces of trs to dst, those of a traceSet one
// by one, nil ones left out.
func appendTraces(dst []context.Context, trs ...context.Context) []context.Context {
	for _, tr := range trs {
		switch tr := tr.(type) {
		case nil:
		case *traceSet:
			dst = append(dst, tr.traces...)
		default:
			dst = append(dst, tr)
		}
	}
	return dst
}

// traceAt returns the trace of the j-th of n parts of an item whose trace
// is tr (Unbatch's items of a batch): its own when tr is a traceSet of n,
// else tr itself.
func traceAt(tr context.Context, j, n int) context.Context {
	if ts, ok := tr.(*traceSet); ok {
		if len(ts.traces) == n {
			return ts.traces[j]
		}
		return nil
	}
	return tr
}

// sourceTraces returns what a source stage does, when the pipeline
// traces, with each chunk it hands on: it gives each item its trace
// (chunk.traces). An item whose receipt has a trace context keeps it; for
// any other item — its receipt has none (its connector found none in the
// message, or does not propagate), or it carries no receipt at all — it
// starts the item's trace with a span of the source (ended at once) and
// attaches its context to the receipt, if there is one, so that the spans
// of every stage after, on the item and what derives from it, are in one
// trace. A tracer that returns the context it was given starts no trace:
// the item then has none, and each stage's call on it is a root.
func sourceTraces[T any](p *Pipeline, s *stage, rs receipts[T]) func(c *chunk[T]) {
	base := Call{Pipeline: p.name, Stage: s.name, Kind: s.kind.String(), Items: 1}
	bg := context.Background()
	start := func(r Receipt) context.Context {
		c := base
		c.Message, _ = r.Message()
		ctx, end := p.tracer.Start(bg, c)
		end(nil)
		if ctx == bg {
			return nil
		}
		// The tracer started the item's trace, or decided it (unsampled).
		r.WithTrace(ctx)
		return ctx
	}
	var (
		seen  bool            // the item carries a receipt
		first context.Context // the trace of its first
	)
	op := settleOp{visit: func(r Receipt) {
		tr := r.Trace()
		if tr == nil {
			tr = start(r)
		}
		if !seen {
			seen, first = true, tr
		}
	}}
	return func(c *chunk[T]) {
		for i := range c.items {
			seen, first = false, nil
			if rs != nil {
				rs(&c.items[i], op)
			}
			if !seen {
				first = start(Receipt{})
			}
			c.traces[i] = first
		}
		first = nil
	}
}
