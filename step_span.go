package sluice

import "context"

// spanStep starts a span with the pipeline's Tracer around each call of a
// stage on an item (or a chunk, or a batch), retries included: the
// outermost step. The span continues the trace of the message the item
// derives from (its receipt's, see Receipt.WithTrace); a call on several
// items links their traces instead. Every stage with a function has it
// when the pipeline was given [Tracing]; without, no chain is built for
// it and nothing is allocated.
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
	return func(ctx context.Context) error {
		traces = traces[:0]
		at.receipts(collect)
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

// sourceTraces returns what a source stage does, when the pipeline
// traces, with each chunk it hands on: for each item's receipt that has
// no trace context (its connector found none in the message, or does not
// propagate), it starts the item's trace with a span of the source (ended
// at once) and attaches its context to the receipt, so that the spans of
// every stage after, on the item and what derives from it, are in one
// trace. Nil when the pipeline does not trace or T carries no receipt:
// an item that carries none has no trace of its own, and each stage's
// call on it starts a trace.
func sourceTraces[T any](p *Pipeline, s *stage, rs receipts[T]) func(items []T) {
	if p.tracer == nil || rs == nil {
		return nil
	}
	base := Call{Pipeline: p.name, Stage: s.name, Kind: s.kind.String(), Items: 1}
	op := settleOp{visit: func(r Receipt) {
		if r.Trace() != nil {
			return
		}
		c := base
		c.Message, _ = r.Message()
		bg := context.Background()
		ctx, end := p.tracer.Start(bg, c)
		end(nil)
		if ctx != bg { // the tracer started the item's trace (or decided it: unsampled)
			r.WithTrace(ctx)
		}
	}}
	return func(items []T) { rs.each(items, op) }
}
