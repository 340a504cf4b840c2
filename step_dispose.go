package sluice

import (
	"fmt"
	"log/slog"
	"reflect"
)

// SkipErrors makes a stage settle an item whose function failed by
// dropping it and counting it (StageStats.Failed), instead of failing the
// pipeline; the item's receipts are acknowledged (see [Receipt]). With
// [Retry], the item is dropped after its last attempt.
func SkipErrors() StageOption {
	return option(fitsFunction, "SkipErrors()", func(c *stageConfig) { c.calls.skip = true })
}

// DeadLetter makes a stage route each item whose function failed to a
// stream of [Failed] items, which the stage stores in *dst when it is
// built; consume it like any other stream (a dead-letter stream nobody
// consumes makes Wait panic, so no failure is dropped silently). T must be
// the stage's input type, and dst not nil: the stage panics otherwise. Failed items are
// counted (StageStats.Failed). Dead letters are handed on as the stage's
// results are (see "Batching and latency" in the package documentation):
// a failure is not held back behind a busy stage's later items. The
// stream closes when the stage's workers have exited. A [Failed] item
// carries the receipts of its Item: the dead-letter stream's sink
// acknowledges them once it has stored it.
func DeadLetter[T any](dst *Stream[Failed[T]]) StageOption {
	if dst == nil {
		return invalid(fitsFunction, "DeadLetter", "DeadLetter: nil destination")
	}
	return option(fitsFunction, "DeadLetter", func(c *stageConfig) { c.calls.dead = dst })
}

// dispose is the last step of a stage's chain when it has SkipErrors or
// DeadLetter: it settles an item whose call failed for good. It is shared
// by the stage's workers; disposer is a worker's end.
type dispose[T any] struct {
	s        *stage
	dead     *edge[Failed[T]] // nil: skip
	receipts receipts[T]      // acknowledges a skipped item's receipts; nil when T carries none
	log      *Tally           // counts failed items for the pipeline's Logger; nil without one
}

// newDispose returns stage s's dispose step for items of type T, or nil
// when c says a failed item fails the pipeline. It makes the dead-letter
// edge, an output of s written by its n workers.
func newDispose[T any](p *Pipeline, s *stage, n int, c callConfig) *dispose[T] {
	if !c.skip && c.dead == nil {
		return nil
	}
	d := &dispose[T]{s: s, receipts: receiptsOf[T](), log: newFailureLog(p, s.name)}
	if c.dead != nil {
		dst, ok := c.dead.(*Stream[Failed[T]])
		if !ok {
			panic(fmt.Sprintf("sluice: stage %q: DeadLetter gets %s, but the stage's items are %v: want *sluice.Stream[sluice.Failed[%v]]",
				s.name, reflect.TypeOf(c.dead), reflect.TypeFor[T](), reflect.TypeFor[T]()))
		}
		d.dead = newEdge[Failed[T]](p, s, n, stageConfig{})
		d.dead.deadLetters = true
		*dst = Stream[Failed[T]]{d.dead}
	}
	return d
}

// itemCalls is the call chain of a stage whose items are T: its options'
// steps, ending in dispose when it has SkipErrors or DeadLetter.
type itemCalls[T any] struct {
	cs *calls[T] // nil: no chain
	d  *dispose[T]
}

func newItemCalls[T any](p *Pipeline, s *stage, c callConfig) itemCalls[T] {
	d := newDispose[T](p, s, s.slots(), c)
	return itemCalls[T]{cs: newCalls[T](p, s, c, d != nil), d: d}
}

// disposal returns worker i's end of ic's dispose step; nil (an
// interface that is nil, not a nil *disposer) when the stage has none.
func (ic itemCalls[T]) disposalOf(i int, w *worker) disposal[T] {
	if ic.d == nil {
		return nil
	}
	return ic.d.worker(i, w)
}

// disposer is worker i's end of a dispose step.
type disposer[T any] struct {
	d    *dispose[T]
	dead *sender[Failed[T]] // nil: skip
	w    *worker
}

func (d *dispose[T]) worker(i int, w *worker) *disposer[T] {
	ds := &disposer[T]{d: d, w: w}
	if d.dead != nil {
		ds.dead = newSender(d.dead, i, w)
	}
	return ds
}

// dispose skips or dead-letters *v, whose last call failed with err.
func (ds *disposer[T]) dispose(v *T, err error) error { return ds.item(*v, err, attemptsOf(err)) }

// item skips or dead-letters v after attempts calls, the last failing with
// err, and counts it. It returns errDisposed, or errStopped when the
// pipeline stopped before the dead letter could be handed on.
func (ds *disposer[T]) item(v T, err error, attempts int) error {
	ds.w.failed.Add(1)
	if ds.d.log != nil {
		ds.d.log.Add(1, slog.String("error", err.Error()), slog.Int("attempts", attempts))
	}
	if ds.dead == nil {
		if ds.d.receipts != nil {
			ds.d.receipts(&v, ack)
		}
		return errDisposed
	}
	ds.dead.stamp()
	if !ds.dead.send(Failed[T]{Item: v, Err: err, Stage: ds.d.s.name, Attempts: attempts}) {
		return errStopped
	}
	return errDisposed
}

func (ds *disposer[T]) sends() bool { return ds.dead != nil }

// flush hands on the worker's partial chunk of dead letters.
func (ds *disposer[T]) flush() bool { return ds.dead == nil || ds.dead.flush() }

// flushHeld hands on the worker's partial chunk of dead letters if it has
// held them too long (see sender.flushHeld): dead letters follow the hold
// rule of a stage's main output.
func (ds *disposer[T]) flushHeld(start, now int64) bool {
	return ds.dead == nil || ds.dead.flushHeld(start, now)
}

// newFailureLog returns the tally of stage's failed items ("items
// failed": how many, the latest's error and its calls), written out when
// the pipeline ends; nil when the pipeline has no logger.
func newFailureLog(p *Pipeline, stage string) *Tally {
	if p.log == nil {
		return nil
	}
	t := &Tally{Logger: p.log, Level: slog.LevelWarn, Msg: "items failed", CountKey: "failed",
		Attrs: []slog.Attr{slog.String("pipeline", p.name), slog.String("stage", stage)}}
	p.onFinish(t.Flush)
	return t
}
