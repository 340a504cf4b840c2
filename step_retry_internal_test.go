package sluice

import (
	"context"
	"errors"
	"testing"
)

// Once the pipeline has stopped, a retry makes no further attempt: the
// chain returns errStopped. (A body makes no first call on a stopped
// pipeline: it checks before each item, see the contract tests.)
func TestRetryMakesNoCallOnceThePipelineStopped(t *testing.T) {
	p := New(t.Context())
	s := newStage(p, kindMap, "m", 1)
	cfg := stageOptions(kindMap, "m", []StageOption{Retry(5, 0, 0)})
	ic := newItemCalls[int](p, s, cfg.calls)
	calls := 0
	call, _ := sinkCallOf(ic.cs, s.workers[0], nil, func(context.Context, int) error {
		if calls++; calls == 2 {
			p.fail(errors.New("another stage failed"))
		}
		return errors.New("busy")
	})
	if err := call(p.ctx, 1); err != errStopped || calls != 2 {
		t.Fatalf("the call returned %v after %d calls; want errStopped after the 2 calls before the stop", err, calls)
	}
}
