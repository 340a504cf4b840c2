package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/cmd/sluice/market"
)

// brokerProbe is the baseline of a sustained run's bars latency, taken in
// the same run: a plain franz-go consumer of the input topic in this
// process (no group, no pipeline, nothing done with the records; reading
// committed records, as the pipeline's source does) measures
// how long after its production each event could have been polled. What
// a window's end → emitted figure has beyond the out-of-orderness and
// this, the pipeline spent; on a machine the broker, ClickHouse, the
// generator and the pipeline share, this is most of it.
type brokerProbe struct {
	mu   sync.Mutex
	lat  market.Latencies
	from time.Time // records produced before it count in no figure
	cl   *kgo.Client
	done chan struct{}
	once sync.Once
}

// startBrokerProbe starts reading topic from its end; its records
// produced from now on are counted until stop.
func startBrokerProbe(brokers, topic string) (*brokerProbe, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return nil, fmt.Errorf("the broker probe: %w", err)
	}
	b := &brokerProbe{cl: cl, from: time.Now(), done: make(chan struct{})}
	go func() {
		defer close(b.done)
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
			now := time.Now()
			b.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				if !r.Timestamp.Before(b.from) {
					b.lat.Add(now.Sub(r.Timestamp))
				}
			})
			b.mu.Unlock()
		}
	}()
	return b, nil
}

// stop ends the probe (before the run's flush, which it would count); a
// nil or stopped probe does nothing.
func (b *brokerProbe) stop() {
	if b == nil {
		return
	}
	b.once.Do(func() {
		b.cl.Close()
		<-b.done
	})
}

// print writes the probe's figure; a nil probe writes nothing.
func (b *brokerProbe) print(w io.Writer, topic string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(w, "    the broker alone, in the same window (a plain consumer of %s in this process: no group, no pipeline): produced → polled p50 %s  p99 %s  max %s\n",
		topic, market.Ms(b.lat.Q(0.5)), market.Ms(b.lat.Q(0.99)), market.Ms(b.lat.Max()))
}
