package sluice_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// A Retry that gives up says how many attempts it made, in the dead
// letter's Err and in the error that fails the pipeline, and still wraps
// the function's error.
func TestRetryThatGivesUpSaysHowManyAttempts(t *testing.T) {
	always := func(context.Context, int) error { return errBad }
	t.Run("dead letter", func(t *testing.T) {
		p := sluice.New(t.Context())
		var dead sluice.Stream[sluice.Failed[int]]
		sluice.ForEach(p, "f", sluice.FromSlice(p, "src", ints(1)), 1, always, sluice.Retry(3, 0, 0), sluice.DeadLetter(&dead))
		letters := sluice.Collect(p, "dead", dead)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		f := letters.Value()[0]
		if f.Attempts != 3 || !errors.Is(f.Err, errBad) || f.Err.Error() != "gave up after 3 attempts: bad item" {
			t.Fatalf("dead letter %+v (Err %q); want 3 attempts and an Err that says so, wrapping %v", f, f.Err, errBad)
		}
	})
	t.Run("fails the pipeline", func(t *testing.T) {
		p := sluice.New(t.Context())
		sluice.ForEach(p, "f", sluice.FromSlice(p, "src", ints(1)), 1, always, sluice.Retry(2, 0, 0))
		err := p.Wait()
		if !errors.Is(err, errBad) || err.Error() != `sluice: stage "f": gave up after 2 attempts: bad item` {
			t.Fatalf("Wait returned %q; want the stage's error saying 2 attempts, wrapping %v", err, errBad)
		}
	})
	t.Run("permanent", func(t *testing.T) {
		p := sluice.New(t.Context())
		var dead sluice.Stream[sluice.Failed[int]]
		calls := 0
		sluice.ForEach(p, "f", sluice.FromSlice(p, "src", ints(1)), 1, func(context.Context, int) error {
			if calls++; calls == 2 {
				return sluice.Permanent(errBad)
			}
			return errBad
		}, sluice.Retry(5, 0, 0), sluice.DeadLetter(&dead))
		letters := sluice.Collect(p, "dead", dead)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		f := letters.Value()[0]
		if f.Attempts != 2 || !sluice.IsPermanent(f.Err) || f.Err.Error() != "failed for good after 2 attempts: bad item" {
			t.Fatalf("dead letter %+v (Err %q); want 2 attempts, permanent", f, f.Err)
		}
	})
}

// A Retry that a drain's grace period ends (DrainGrace(0): at once) says
// that a drain ended it, and after how many attempts.
func TestRetryEndedByADrainSaysSo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := sluice.New(t.Context(), sluice.DrainGrace(0))
		var dead sluice.Stream[sluice.Failed[int]]
		calls := 0
		sluice.ForEach(p, "f", sluice.FromSlice(p, "src", ints(1)), 1, func(context.Context, int) error {
			if calls++; calls == 2 {
				p.Drain()
			}
			return errBad
		}, sluice.Retry(10, time.Millisecond, time.Hour), sluice.DeadLetter(&dead))
		letters := sluice.Collect(p, "dead", dead)
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		f := letters.Value()[0]
		if !errors.Is(f.Err, errBad) || f.Err.Error() != "retries ended by a drain after 2 attempts: bad item" || f.Attempts != 2 {
			t.Fatalf("dead letter %+v (Err %q); want an Err that says a drain ended the retries", f, f.Err)
		}
	})
}

// A ForEachChunk item dead-lettered after retries says so too, with its
// own error.
func TestRetryOfAChunkSaysHowManyAttemptsPerItem(t *testing.T) {
	p := sluice.New(t.Context())
	var dead sluice.Stream[sluice.Failed[int]]
	sluice.ForEachChunk(p, "sink", sluice.FromSlice(p, "src", ints(4), sluice.Chunk(4)), 1, func(_ context.Context, items []int) error {
		errs := make(sluice.ItemErrors, len(items))
		for i, v := range items {
			if v == 2 {
				errs[i] = errBad
			}
		}
		return errs
	}, sluice.Retry(2, 0, 0), sluice.DeadLetter(&dead))
	letters := sluice.Collect(p, "dead", dead)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	got := letters.Value()
	if len(got) != 1 || got[0].Item != 2 || got[0].Attempts != 2 || got[0].Err.Error() != "gave up after 2 attempts: bad item" {
		t.Fatalf("dead letters %+v; want item 2 after 2 attempts, its Err saying so", got)
	}
}
