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
		ctx, end := s.t.Start(ctx, c)
		err := next(ctx)
		end(err)
		return err
	}
}
