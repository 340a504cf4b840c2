package sluice

import (
	"context"
	"errors"
	"testing"
)

// Once the pipeline has stopped, the halt step makes no call, and a retry
// makes no further attempt: the chain returns errStopped.
func TestHaltMakesNoCallOnceThePipelineStopped(t *testing.T) {
	p := New(t.Context())
	s := newStage(p, kindMap, "m", 1)
	cfg := stageOptions(kindMap, "m", []StageOption{Retry(5, 0, 0)})
	ic := newItemCalls[int](p, s, cfg.calls)
	calls := 0
	ch := ic.worker(0, s.workers[0], func(context.Context, *int) error {
		if calls++; calls == 2 {
			p.fail(errors.New("another stage failed"))
		}
		return errors.New("busy")
	})
	v := 1
	if err := ch.run(p.ctx, &v); err != errStopped || calls != 2 {
		t.Fatalf("run returned %v after %d calls; want errStopped after the 2 calls before the stop", err, calls)
	}
	if err := ch.run(p.ctx, &v); err != errStopped || calls != 2 {
		t.Fatalf("run on a stopped pipeline returned %v after %d calls in all; want errStopped and no call", err, calls)
	}
}
