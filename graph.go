package sluice

import (
	"errors"
	"fmt"
)

// A stream's producer hands nothing on before the stream's consumer is
// built (the consumer sizes the queue), so a read that waits on a stage
// downstream of a stream with no consumer would wait for ever. The blocking
// reads (Result.Value, a ToSeq loop) check the graph first and fail at once
// instead, naming the stream: a mistake in the order of construction is
// loud, never a hang. Wait checks every stream, upstream or not.

// errIncomplete is the pipeline's error after a read found a stream
// without a consumer upstream of what it waits for.
var errIncomplete = errors.New("sluice: a read waited on a stage downstream of a stream with no consumer")

// mustBeFed panics, after stopping the pipeline and letting its goroutines
// exit, if any stream produced upstream of stage s has no consumer yet: a
// read that waits on s (what names it) could then wait for ever. Once Wait
// has been called the graph is complete (Wait checked it), and once s has
// finished nothing waits.
func (p *Pipeline) mustBeFed(s *stage, what string, finished <-chan struct{}) {
	select {
	case <-finished:
		return
	default:
	}
	p.mu.Lock()
	if p.sealed {
		p.mu.Unlock()
		return
	}
	hole := unconsumedAbove(s)
	p.mu.Unlock()
	if hole == nil {
		return
	}
	p.fail(errIncomplete)
	if !onStageGoroutine() { // a stage's goroutine must not wait for itself
		p.wg.Wait()
	}
	panic(fmt.Sprintf("sluice: pipeline %q: %s would wait for ever: %s has no consumer yet; build every stream's consumer before waiting on what is downstream of its producer",
		p.name, what, describeEdge(hole)))
}

// unconsumedAbove returns a stream without a consumer that a stage
// upstream of s (s included) produces, or nil. Called with p.mu held.
func unconsumedAbove(s *stage) edgeInfo {
	seen := map[*stage]bool{s: true}
	todo := []*stage{s}
	for len(todo) > 0 {
		st := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, e := range st.outs {
			if e.consumer() == nil {
				return e
			}
		}
		for _, e := range st.ins {
			if up := e.producer(); !seen[up] {
				seen[up] = true
				todo = append(todo, up)
			}
		}
	}
	return nil
}

// describeEdge names a stream for a user: which stage makes it, and which
// of its outputs it is.
func describeEdge(e edgeInfo) string {
	switch {
	case e.deadLetter():
		return fmt.Sprintf("the dead-letter stream of stage %q (see DeadLetter)", e.producer().name)
	case e.branchName() != "":
		return e.branchName()
	}
	return fmt.Sprintf("stream %q (from stage %q)", e.name(), e.producer().name)
}

// errMisuse is the pipeline's error after a stage's construction panicked.
var errMisuse = errors.New("sluice: the pipeline was stopped: building one of its stages panicked")

// guard is deferred by every function that builds a stage: when the build
// panics (programmer error: a bad argument or option), it lets the panic
// go on after making sure that nothing is left running. Called outside
// the pipeline (the goroutine that builds it, say), it stops p and, unless
// Wait has begun (Wait's caller then waits), waits for the goroutines of
// the stages built before, so that a recovered construction panic leaves
// nothing running. Called on a stage goroutine (a stage function that
// builds a stage), it neither stops nor waits: that pipeline's WaitGroup
// counts the caller, and the panic fails the stage as any panic in its
// function does (a *PanicError), unless the function recovers it.
func guard(p *Pipeline) {
	r := recover()
	if r == nil {
		return
	}
	if p != nil && p.ctx != nil && !onStageGoroutine() {
		p.fail(errMisuse)
		p.mu.Lock()
		sealed := p.sealed
		p.mu.Unlock()
		if !sealed {
			p.wg.Wait()
		}
	}
	panic(r)
}
