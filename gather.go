package sluice

import (
	"context"
	"fmt"
	"reflect"
	"unsafe"
)

// Gather makes each call of a [ForEachChunk] function take every item
// waiting in the stage's input, up to n: a worker that takes a chunk also
// takes the chunks queued behind it and calls the function once with all
// of their items, in the order they were queued. A sink that keeps up
// still gets each chunk as it arrives, at once (no timer is involved); one
// that falls behind gets fewer, larger calls — what a bulk insert or a
// batched publish wants, since its cost is mostly per call. No call holds
// more than n items, so Gather also caps a call of a stage fed larger
// chunks: a chunk of more than n items is handed over n at a time. An
// item that is itself a batch (a slice, as [Batch] makes) counts as its
// length, and a batch longer than n goes alone. So that n items can wait
// while a call runs, the stage's input holds at least n in full chunks
// (more than [DefaultBuffer] for a large n), unless the stage that feeds
// it sets [Buffer]. Items of several chunks are copied into one slice per
// worker (a copy per item, none when a call takes a single chunk). A
// ForEachChunk given Gather(n) with n < 1 panics, as does any other stage given it.
func Gather(n int) StageOption {
	if n < 1 {
		return invalid(fitsChunkSink, "Gather", fmt.Sprintf("Gather must be ≥ 1, got %d", n))
	}
	return option(fitsChunkSink, fmt.Sprintf("Gather(%d)", n), func(c *stageConfig) { c.gather = n })
}

// gatherer is one ForEachChunk worker's end of Gather: it forms calls of
// up to max (weighed) items from the chunk the loop took and the chunks
// waiting behind it.
type gatherer[T any] struct {
	r      *receiver[T]
	max    int
	weight func(v *T) int // nil: every item counts one
	buf    []T            // the items of a call that spans chunks
	taken  []*chunk[T]    // chunks taken here whose items are in buf, released after the call
	// traces are the call's items' traces when the pipeline traces: the
	// worker's input traces for the call (see traceSlot).
	traces []context.Context
}

func newGatherer[T any](r *receiver[T], max int) *gatherer[T] {
	g := &gatherer[T]{r: r, max: max}
	if reflect.TypeFor[T]().Kind() == reflect.Slice {
		// Every slice type has the same header: read its length.
		g.weight = func(v *T) int { return len(*(*[]struct{})(unsafe.Pointer(v))) }
	}
	return g
}

// fit returns how many leading items of items fit in room, and their
// weight.
func (g *gatherer[T]) fit(items []T, room int) (k, w int) {
	if g.weight == nil {
		k = min(len(items), room)
		return k, k
	}
	for k < len(items) {
		x := g.weight(&items[k])
		if w+x > room {
			break
		}
		w += x
		k++
	}
	return k, w
}

// poll takes a chunk waiting in the input without waiting for one; nil
// when none is there (or the input is closed).
func (g *gatherer[T]) poll() *chunk[T] {
	if len(g.r.e.ch) == 0 {
		return nil
	}
	select {
	case c := <-g.r.e.ch:
		if c != nil {
			g.r.took(c)
		}
		return c
	default:
		return nil
	}
}

// each calls call once per group of items it forms, starting with c's
// (which the loop releases afterwards) and going on with the chunks
// waiting behind it, until a group ends with its last chunk used up. A
// chunk it takes is released here.
func (g *gatherer[T]) each(c *chunk[T], call func(items []T) error) error {
	cur, off := c, 0
	for {
		items, spans := g.group(&cur, &off, c)
		if c.traces != nil {
			g.r.w.tin, g.r.w.ti = g.traces, 0
		}
		err := call(items)
		if c.traces != nil {
			clear(g.traces)
			g.traces = g.traces[:0]
		}
		if spans {
			if g.r.e.scrub {
				clear(g.buf)
			}
			g.buf = g.buf[:0]
		}
		for i, t := range g.taken {
			g.r.release(t)
			g.taken[i] = nil
		}
		g.taken = g.taken[:0]
		if err != nil || off == len(cur.items) {
			if cur != c {
				g.r.release(cur)
			}
			return err
		}
		// cur has items left over: they start the next call.
	}
}

// group forms one call's items from *cur at *off onwards and the chunks
// waiting behind it, advancing *cur and *off past them. spans reports
// that the items were copied into g.buf; chunks used up on the way (other
// than first, which the loop owns) go to g.taken.
func (g *gatherer[T]) group(cur **chunk[T], off *int, first *chunk[T]) (items []T, spans bool) {
	room := g.max
	for {
		rest := (*cur).items[*off:]
		k, w := g.fit(rest, room)
		if k == 0 && len(items) == 0 && len(rest) > 0 {
			// An item heavier than max goes alone: only into a call that
			// holds nothing yet (an empty batch weighs nothing, but it
			// is an item of the call).
			k, w = 1, room
		}
		part := rest[:k]
		if trs := (*cur).traces; trs != nil {
			g.traces = append(g.traces, trs[*off:*off+k]...)
		}
		switch {
		case items == nil && !spans:
			items = part
		case !spans:
			g.buf = append(append(g.buf[:0], items...), part...)
			items, spans = g.buf, true
		default:
			g.buf = append(g.buf, part...)
			items = g.buf
		}
		*off += k
		room -= w
		if *off < len((*cur).items) || room <= 0 {
			return items, spans
		}
		next := g.poll()
		if next == nil {
			return items, spans
		}
		if *cur != first {
			g.taken = append(g.taken, *cur)
		}
		*cur, *off = next, 0
	}
}
