package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// The broker's ceiling: the pipeline's generator, and a bare nats.go loop that
// does what the demo's pipeline does to the broker — fetch a batch, publish
// one message per input with its ID, wait for the server's acks, then
// acknowledge the inputs — and nothing else.
const (
	ceilIn      = "DEMO_CEIL_IN"
	ceilOut     = "DEMO_CEIL_OUT"
	ceilInSubj  = "ceiling.in"
	ceilOutSubj = "ceiling.out"
)

type ceilResult struct {
	events int64
	wall   time.Duration
}

func (r ceilResult) perSec() float64 { return float64(r.events) / r.wall.Seconds() }

func runCeiling(ctx context.Context, url string, f natsFlags) (ceilResult, error) {
	var res ceilResult
	genConn, err := natsx.Connect(url, nats.Name("sluice-ceiling-generator"))
	if err != nil {
		return res, err
	}
	defer genConn.Close()
	nc, err := natsx.Connect(url, nats.Name("sluice-ceiling-loop"))
	if err != nil {
		return res, err
	}
	defer nc.Close()
	var failed atomic.Int64
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncErrHandler(func(jetstream.JetStream, *nats.Msg, error) {
		failed.Add(1)
	}))
	if err != nil {
		return res, err
	}
	resetBoth := func(ctx context.Context) error {
		return errors.Join(market.ResetStream(ctx, js, ceilIn, ceilInSubj, storageOf(f)),
			market.ResetStream(ctx, js, ceilOut, ceilOutSubj, storageOf(f)))
	}
	if err := resetBoth(ctx); err != nil {
		return res, err
	}
	defer func() { _ = resetBoth(context.Background()) }() // free the space
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	cons, err := js.CreateOrUpdateConsumer(cctx, ceilIn, jetstream.ConsumerConfig{
		Durable: "ceiling", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: f.inflight,
	})
	cancel()
	if err != nil {
		return res, err
	}

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var generated atomic.Int64
	var genDone atomic.Bool
	genErr := make(chan error, 1)
	start := time.Now()
	go func() {
		err := market.GenerateNATS(ctx, genConn, ceilInSubj, natsConfig(f, nil), &generated)
		genDone.Store(true)
		genErr <- err
	}()
	var done int64
	batch := make([]jetstream.Msg, 0, 500)
	for !genDone.Load() || done < generated.Load() {
		if batch, err = ceilingBatch(js, cons, &failed, batch[:0]); err != nil {
			break
		}
		done += int64(len(batch))
	}
	res.wall, res.events = time.Since(start), done
	stop() // the generator, if the loop failed
	gerr := <-genErr
	switch {
	case err != nil:
		return res, err
	case gerr != nil:
		return res, fmt.Errorf("generator: %w", gerr)
	}
	return res, nil
}

// ceilingBatch fetches up to 500 messages into batch, publishes one
// message per input with its ID, waits for the server's acks, then
// acknowledges the inputs.
func ceilingBatch(js jetstream.JetStream, cons jetstream.Consumer, failed *atomic.Int64, batch []jetstream.Msg) ([]jetstream.Msg, error) {
	b, err := cons.Fetch(500, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		return batch, err
	}
	for m := range b.Messages() {
		id := m.Headers().Get(jetstream.MsgIDHeader)
		if _, err := js.PublishMsgAsync(&nats.Msg{Subject: ceilOutSubj, Data: m.Data(),
			Header: nats.Header{jetstream.MsgIDHeader: []string{id}}}); err != nil {
			return batch, err
		}
		batch = append(batch, m)
	}
	if err := b.Error(); err != nil {
		return batch, err
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		return batch, errors.New("no acknowledgement for 30s")
	}
	if failed.Load() > 0 {
		return batch, fmt.Errorf("%d publishes failed", failed.Load())
	}
	for _, m := range batch {
		if err := m.Ack(); err != nil {
			return batch, err
		}
	}
	return batch, nil
}
