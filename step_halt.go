package sluice

import "context"

// haltStep makes no call once the pipeline has stopped: two atomic loads
// per call, so that a stop is noticed within one item, even in the middle
// of a chunk, and before each retry. Every chain has it; a stage without a
// chain checks the same in its plain loop.
type haltStep struct{}

func (haltStep) rank() int { return rankHalt }

func (haltStep) wrap(next call, at *site) call {
	p := at.p
	return func(ctx context.Context) error {
		if p.halted() {
			return errStopped
		}
		return next(ctx)
	}
}
