package market

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sluicehq/sluice"
	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// natsCounts is what a NATS run counts as the sink stores.
type natsCounts struct {
	committed, stored, dead, generated atomic.Int64
	genDone                            atomic.Bool
	doneAt                             atomic.Int64 // when every generated event was stored, in Unix ns
	sampleTick                         atomic.Uint64
	tally                              *tally
	finish                             func() // ends the run: every generated event is stored
}

// onStored counts a stored batch: latencies (input stored → output
// stored for one in eight), dead letters by reason, and the run's end.
func (c *natsCounts) onStored(b []outMsg) {
	now := time.Now()
	var nDead int64
	c.tally.mu.Lock()
	for i := range b {
		o := &b[i]
		d := now.Sub(o.in.Received())
		c.tally.lat.Add(d)
		c.tally.window.Add(d)
		if c.sampleTick.Add(1)&7 == 0 {
			if md, err := o.in.Metadata(); err == nil {
				c.tally.e2e.Add(now.Sub(md.Timestamp))
			}
		}
		if o.Subject == NATSDeadSubj {
			nDead++
			c.tally.reasons[o.Header.Get(ReasonHeader)]++
		}
	}
	c.tally.mu.Unlock()
	c.dead.Add(nDead)
	c.stored.Add(int64(len(b)) - nDead)
	c.committed.Add(int64(len(b)))
	c.checkDone()
}

// checkDone ends the run once the generator is done and every event it
// generated is stored.
func (c *natsCounts) checkDone() {
	if c.genDone.Load() && c.committed.Load() >= c.generated.Load() {
		c.doneAt.CompareAndSwap(0, time.Now().UnixNano())
		c.finish()
	}
}

// run starts the generator and the progress lines, waits for the pipeline
// p, and returns what the run measured.
func (c *natsCounts) run(ctx, drain context.Context, p *sluice.Pipeline, src *natsx.Source, genConn *nats.Conn, cfg NATSConfig) (res NATSResult, err error) {
	start := time.Now()
	genErr := make(chan error, 1)
	genCtx, stopGen := context.WithCancel(ctx)
	defer stopGen()
	defer context.AfterFunc(drain, stopGen)()
	go func() {
		defer stopGen()
		err := GenerateNATS(genCtx, genConn, NATSInSubj, cfg, &c.generated)
		res.GenWall = time.Since(start) // read after genErr
		c.genDone.Store(true)
		c.checkDone()
		genErr <- err
	}()
	progressDone, progressExited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(progressExited)
		if cfg.Progress != nil {
			progress(cfg.Progress, start, progressDone, &c.committed, &c.dead, c.tally, src)
		}
	}()
	werr := p.Wait()
	res.Wall = time.Since(start)
	if at := c.doneAt.Load(); at > 0 {
		res.Wall = time.Unix(0, at).Sub(start) // not counting the drain's end
	}
	close(progressDone)
	<-progressExited
	stopGen() // if the pipeline failed
	gerr := <-genErr
	switch {
	case werr != nil:
		return res, werr
	case gerr != nil && !errors.Is(gerr, context.Canceled):
		return res, fmt.Errorf("generator: %w", gerr)
	}
	if drain.Err() != nil { // a signal ended the run
		res.Drained = context.Cause(drain)
	}
	res.Generated = c.generated.Load()
	res.Stored, res.Dead = c.stored.Load(), c.dead.Load()
	res.Reasons, res.Latency, res.EndToEnd = c.tally.results()
	res.Stages = p.Stats()
	for _, s := range res.Stages.Stages {
		if s.Name == "enrich" {
			res.Batches = s.In
		}
	}
	return res, nil
}
