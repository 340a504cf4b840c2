package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice"
)

// partialSink is a ForEachChunk function that stores the items fail does
// not fail, and says which with ItemErrors; it records every call's items
// and what it stored.
type partialSink struct {
	fail   func(v, call int) error // the item's error at its call-th call (1, 2, …)
	mu     sync.Mutex
	tries  map[int]int
	calls  [][]int
	stored []int
}

func (s *partialSink) write(_ context.Context, items []int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tries == nil {
		s.tries = map[int]int{}
	}
	s.calls = append(s.calls, slices.Clone(items))
	errs := make(sluice.ItemErrors, len(items))
	failed := false
	for i, v := range items {
		s.tries[v]++
		if errs[i] = s.fail(v, s.tries[v]); errs[i] != nil {
			failed = true
		} else {
			s.stored = append(s.stored, v)
		}
	}
	if failed {
		return errs
	}
	return nil
}

var errBadValue = errors.New("bad value")

func TestItemErrorsRetryOnlyTheFailedItemsThenDeadLetterEachWithItsOwnError(t *testing.T) {
	s := &partialSink{fail: func(v, call int) error {
		switch {
		case v%10 == 0:
			return fmt.Errorf("item %d: %w", v, errBadValue) // every time
		case v%10 == 5 && call == 1:
			return errors.New("busy") // once
		}
		return nil
	}}
	p := sluice.New(t.Context())
	var dead sluice.Stream[sluice.Failed[int]]
	src := sluice.FromSlice(p, "src", ints(100), sluice.Chunk(100))
	sluice.ForEachChunk(p, "sink", src, 1, s.write, sluice.Retry(3, 0, 0), sluice.DeadLetter(&dead))
	letters := sluice.Collect(p, "dead", dead)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	var deadItems []int
	for _, f := range letters.Value() {
		deadItems = append(deadItems, f.Item)
		if f.Attempts != 3 || !strings.Contains(f.Err.Error(), fmt.Sprintf("item %d:", f.Item)) || f.Stage != "sink" {
			t.Errorf("dead letter %+v: want 3 attempts and the item's own error", f)
		}
	}
	if want := []int{0, 10, 20, 30, 40, 50, 60, 70, 80, 90}; !slices.Equal(deadItems, want) {
		t.Fatalf("dead letters %v; want %v", deadItems, want)
	}
	stored := slices.Sorted(slices.Values(s.stored))
	if len(stored) != 90 || slices.Contains(stored, 10) || !slices.Contains(stored, 15) {
		t.Fatalf("stored %v; want the 90 items that are not multiples of 10, once each", stored)
	}
	// The first call holds all 100; the retries only what had failed.
	if got := sizes(s.calls); !slices.Equal(got, []int{100, 20, 10}) {
		t.Fatalf("call sizes %v; want [100 20 10]", got)
	}
}

func TestItemErrorsDoNotRetryAPermanentError(t *testing.T) {
	s := &partialSink{fail: func(v, call int) error {
		switch {
		case v == 3:
			return sluice.Permanent(errBadValue)
		case v == 4 && call < 3:
			return errors.New("busy")
		}
		return nil
	}}
	p := sluice.New(t.Context())
	var dead sluice.Stream[sluice.Failed[int]]
	sluice.ForEachChunk(p, "sink", sluice.FromSlice(p, "src", ints(8), sluice.Chunk(8)), 1, s.write,
		sluice.Retry(5, 0, 0), sluice.DeadLetter(&dead))
	letters := sluice.Collect(p, "dead", dead)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	got := letters.Value()
	if len(got) != 1 || got[0].Item != 3 || got[0].Attempts != 1 || !sluice.IsPermanent(got[0].Err) {
		t.Fatalf("dead letters %+v; want item 3 alone, after 1 attempt", got)
	}
	if s.tries[3] != 1 || s.tries[4] != 3 || len(s.stored) != 7 {
		t.Fatalf("calls per item %v, stored %v; want item 3 called once, item 4 three times, 7 stored", s.tries, s.stored)
	}
}

func TestItemErrorsWithoutAPolicyFailThePipelineAndAcknowledgeWhatWasStored(t *testing.T) {
	l := newLedger(t, func(k uint64) int { return 1 })
	p := sluice.New(t.Context())
	sluice.ForEachChunk(p, "sink", sluice.FromSlice(p, "src", msgs(l, 5), sluice.Chunk(5)), 1, func(_ context.Context, ms []msg) error {
		errs := make(sluice.ItemErrors, len(ms))
		for i, m := range ms {
			if m.key == 2 {
				errs[i] = errBadValue
			} else {
				l.store(m.key)
			}
		}
		return errs
	})
	err := p.Wait()
	var se *sluice.StageError
	var ie sluice.ItemErrors
	if !errors.As(err, &se) || se.Stage != "sink" || !errors.As(err, &ie) || !errors.Is(err, errBadValue) {
		t.Fatalf("got %v; want a StageError of stage sink wrapping the ItemErrors", err)
	}
	if !strings.Contains(err.Error(), "1 of 5 items failed; item 2: bad value") {
		t.Errorf("got message %q", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range uint64(5) {
		if want := map[bool]int{true: 0, false: 1}[k == 2]; l.calls[k] != want || l.causes[k] != nil {
			t.Errorf("message %d settled %d times (cause %v); want %d, acknowledged", k, l.calls[k], l.causes[k], want)
		}
	}
}

func TestItemErrorsOfTheWrongLengthPanicNamingTheStage(t *testing.T) {
	p := sluice.New(t.Context())
	sluice.ForEachChunk(p, "bulk", sluice.FromSlice(p, "src", ints(4), sluice.Chunk(4)), 1, func(context.Context, []int) error {
		return sluice.ItemErrors{errBadValue}
	})
	err := p.Wait()
	var pe *sluice.PanicError
	if !errors.As(err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), `sluice: ForEachChunk "bulk": the function returned ItemErrors of 1 entries for a call of 4 items`) {
		t.Fatalf("got %v; want a panic naming the stage and the lengths", err)
	}
}
