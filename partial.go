package sluice

import (
	"context"
	"errors"
	"fmt"
	"slices"
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

// chunkCall is one ForEachChunk worker's call of its function on a
// call's items: the base of its call chain, which keeps track of what
// ItemErrors say, and the chain's dispose step, which settles each item
// that failed for good on its own.
type chunkCall[T any] struct {
	stage  string
	f      func(context.Context, []T) error
	rc     receipts[T]
	ds     *disposer[T] // nil: a failed item fails the pipeline
	cur    []T          // the items of the call at hand: those still to store
	calls  int          // calls made for the items at hand
	errs   []error      // errs[i] is the last error of the call's i-th item still failed
	gaveUp []Failed[T]  // items whose error is permanent, with the calls made
}

// begin readies c for a call with items. The chain gets &c.cur, which
// lives as long as c does: a pointer to the caller's slice would move it
// to the heap at every call.
func (c *chunkCall[T]) begin(items []T) {
	c.cur = items
	c.calls = 0
	clear(c.errs)
	c.errs = c.errs[:0]
	clear(c.gaveUp)
	c.gaveUp = c.gaveUp[:0]
}

// call calls f with *v, the items still to store; after a failure *v
// holds only the items still failed (see record).
func (c *chunkCall[T]) call(ctx context.Context, v *[]T) error {
	c.calls++
	err := c.f(ctx, *v)
	if err == nil {
		return nil
	}
	return c.record(v, err)
}

// record takes the outcome err of a call with *v: a plain error fails
// every item; an ItemErrors fails those it names, and the others, stored,
// are acknowledged. An item whose error is permanent goes to c.gaveUp; the
// others stay in *v (compacted in place), their errors in c.errs. It
// returns nil when no item failed, and otherwise an error that a retry
// judges as it judges one item's: err, or — when some items failed for
// good and others may not have — an ItemErrors of those left.
func (c *chunkCall[T]) record(v *[]T, err error) error {
	items := *v
	var ie ItemErrors
	if errors.As(err, &ie) && len(ie) != len(items) {
		panic(fmt.Sprintf("sluice: ForEachChunk %q: the function returned ItemErrors of %d entries for a call of %d items", c.stage, len(ie), len(items)))
	}
	k, permanent := 0, 0
	clear(c.errs)
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
			permanent++
		default:
			items[k] = items[i]
			c.errs = append(c.errs, e)
			k++
		}
	}
	clear(items[k:]) // keep nothing alive that is settled
	*v = items[:k]
	switch {
	case k == 0 && permanent == 0:
		return nil // an ItemErrors with no error: every item was stored
	case k > 0 && permanent > 0:
		return ItemErrors(slices.Clone(c.errs))
	}
	return err
}

// dispose is the chain's dispose step: it skips or dead-letters every item
// of the call that failed, each with its own last error (said to come
// after retries, as err does).
func (c *chunkCall[T]) dispose(v *[]T, err error) error {
	var re *retryError
	errors.As(err, &re)
	for i, item := range *v {
		e := c.errs[i]
		if re != nil {
			e = &retryError{attempts: c.calls, drained: re.drained, exhausted: re.exhausted, err: e}
		}
		if c.ds.item(item, e, c.calls) == errStopped {
			return errStopped
		}
	}
	if err := c.settleGaveUp(); err != nil {
		return err
	}
	return errDisposed
}

// settleGaveUp settles the items that failed for good; without a dispose
// step, the first one's error fails the pipeline.
func (c *chunkCall[T]) settleGaveUp() error {
	for _, g := range c.gaveUp {
		if c.ds == nil {
			return g.Err
		}
		if c.ds.item(g.Item, g.Err, g.Attempts) == errStopped {
			return errStopped
		}
	}
	return nil
}

// done finishes the call begun with begin, whose chain returned err: once
// it succeeded, it acknowledges the items stored last and settles those
// that failed for good on the way. It returns nil once every item is
// settled.
func (c *chunkCall[T]) done(err error) error {
	items := c.cur
	c.cur = nil
	switch err {
	case nil:
		c.rc.each(items, ack)
		return c.settleGaveUp()
	case errDisposed:
		return nil
	}
	return err
}

func (c *chunkCall[T]) sends() bool                     { return c.ds.sends() }
func (c *chunkCall[T]) flush() bool                     { return c.ds.flush() }
func (c *chunkCall[T]) flushHeld(start, now int64) bool { return c.ds.flushHeld(start, now) }
