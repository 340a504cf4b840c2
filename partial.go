package sluice

import (
	"context"
	"errors"
	"fmt"
)

// ItemErrors is what a [ForEachChunk] function returns when it stored some
// of the call's items and failed the others: one entry per item of the
// call, in order, nil for an item that was stored. The stage then
// acknowledges the receipts of the stored items (see [Receipt]) and treats
// only the failed ones as failed: [Retry] calls the function again with
// those items alone, and after the last attempt [DeadLetter] or
// [SkipErrors] settles each with its own error (without an error option,
// the pipeline fails with the ItemErrors). A bulk write that rejects one
// bad value thus dead-letters that item, not the call's thousands of
// good ones. An ItemErrors whose length is not the call's item count is a
// programmer error: the stage panics. errors.Is and errors.As look into
// every item's error.
type ItemErrors []error

func (e ItemErrors) Error() string {
	n, first := 0, -1
	for i, err := range e {
		if err != nil {
			if n++; first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return fmt.Sprintf("sluice: ItemErrors: none of %d items failed", len(e))
	}
	return fmt.Sprintf("%d of %d items failed; item %d: %v", n, len(e), first, e[first])
}

// Unwrap returns the errors of the items that failed.
func (e ItemErrors) Unwrap() []error {
	var errs []error
	for _, err := range e {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// chunkFailure holds the items of a ForEachChunk call that are still
// failed, each with its last error, and those that failed for good.
type chunkFailure[T any] struct {
	stage  string
	rc     receipts[T]
	calls  int // calls made so far
	left   []T
	errs   []error     // errs[i] is left[i]'s
	gaveUp []Failed[T] // items whose error is permanent, with the calls made
}

// record takes the outcome err of a call with items: a plain error fails
// every item; an ItemErrors fails those it names, and the others, stored,
// are acknowledged. An item whose error is permanent goes to c.gaveUp;
// the others stay in c.left (items compacted in place). It returns the
// error that stands for c.left.
func (c *chunkFailure[T]) record(items []T, err error) error {
	var ie ItemErrors
	if errors.As(err, &ie) && len(ie) != len(items) {
		panic(fmt.Sprintf("sluice: ForEachChunk %q: the function returned ItemErrors of %d entries for a call of %d items", c.stage, len(ie), len(items)))
	}
	k := 0
	var stands error
	c.errs = c.errs[:0]
	for i := range items {
		e := err
		if ie != nil {
			e = ie[i]
		}
		switch {
		case e == nil:
			if c.rc != nil {
				c.rc(&items[i], ack)
			}
		case IsPermanent(e):
			c.gaveUp = append(c.gaveUp, Failed[T]{Item: items[i], Err: e, Attempts: c.calls})
		default:
			if stands == nil {
				stands = e
			}
			items[k] = items[i]
			c.errs = append(c.errs, e)
			k++
		}
	}
	clear(items[k:]) // keep nothing alive that is settled
	c.left = items[:k]
	return stands
}

// failedChunk settles the items of a ForEachChunk call that returned err
// (see [ItemErrors]): while the policy allows, it calls f again with the
// items still failed (not those whose error is permanent), acknowledging
// what each call stores; then it skips or dead-letters each failed item
// with its last error. It returns nil once every item is settled,
// errStopped when the pipeline is stopping, or the error that fails the
// pipeline.
func (h *onError[T]) failedChunk(ctx context.Context, name string, rc receipts[T], items []T, err error, f func(context.Context, []T) error) error {
	c := chunkFailure[T]{stage: name, rc: rc, calls: 1}
	stands := c.record(items, err)
	if len(c.left) == 0 && len(c.gaveUp) == 0 {
		return nil // an ItemErrors with no error: every item was stored
	}
	if h == nil {
		return err
	}
	if len(c.left) > 0 {
		_, _, e := h.retry(ctx, stands, func(ctx context.Context) error {
			c.calls++
			e := f(ctx, c.left)
			if e == nil {
				rc.each(c.left, ack)
				c.left = c.left[:0]
				return nil
			}
			if e = c.record(c.left, e); len(c.left) == 0 {
				return nil // the rest failed for good
			}
			return e
		})
		if e == errStopped || isThrottleErr(e) {
			return e
		}
	}
	for _, g := range c.gaveUp {
		if err := h.settle(g.Item, g.Err, g.Attempts); err != nil {
			return err
		}
	}
	for i, v := range c.left {
		if err := h.settle(v, c.errs[i], c.calls); err != nil {
			return err
		}
	}
	return nil
}
