package market

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// GenerateNATS publishes cfg.Events market events (or as many as it can in
// cfg.Duration) to subject, at cfg.Rate per second if set, each with the
// message ID "ev-N"; it counts in generated those the server has stored.
func GenerateNATS(ctx context.Context, nc *nats.Conn, subject string, cfg NATSConfig, generated *atomic.Int64) error {
	var failed atomic.Int64
	var firstErr atomic.Value
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
		failed.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}))
	if err != nil {
		return err
	}
	defer js.CleanupPublisher()
	rng := rand.New(rand.NewPCG(4, 4))
	const window = 1000
	start := time.Now()
	var buf []byte
	for i := 0; ; {
		if cfg.Duration > 0 {
			if time.Since(start) >= cfg.Duration {
				return nil
			}
		} else if i >= cfg.Events {
			return nil
		}
		n := window
		if cfg.Duration == 0 {
			n = min(n, cfg.Events-i)
		}
		ts := time.Now().UnixNano()
		for range n {
			buf = Generate(buf[:0], rng, i, ts, cfg.Malformed)
			data := append([]byte(nil), buf...)
			if _, err := js.PublishAsync(subject, data, jetstream.WithMsgID("ev-"+strconv.Itoa(i))); err != nil {
				return err
			}
			i++
		}
		select {
		case <-js.PublishAsyncComplete():
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(30 * time.Second):
			return errors.New("the server has not acknowledged the events for 30s")
		}
		if failed.Load() > 0 {
			return fmt.Errorf("%d events not stored: %v", failed.Load(), firstErr.Load())
		}
		generated.Store(int64(i))
		if cfg.Rate > 0 {
			ahead := time.Duration(float64(i)/float64(cfg.Rate)*1e9) - time.Since(start)
			if ahead > 0 && !SleepCtx(ctx, ahead) {
				return ctx.Err()
			}
		}
	}
}

func SleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// progress prints a line every second until done is closed.
func progress(w io.Writer, start time.Time, done <-chan struct{}, committed, dead *atomic.Int64, tally *tally, src *natsx.Source) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last, lastAt := int64(0), start
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			c := committed.Load()
			win := tally.takeWindow()
			fmt.Fprintf(w, "%6.1fs  %7s events/s  fetched → stored p50 %-7s p99 %-7s  in flight %6d  dead-lettered %6d  stored %d\n",
				now.Sub(start).Seconds(), SI(float64(c-last)/now.Sub(lastAt).Seconds()),
				Ms(win.Q(0.5)), Ms(win.Q(0.99)), src.Stats().InFlight, dead.Load(), c)
			last, lastAt = c, now
		}
	}
}

// tally is what the sink's writes measured: latencies and dead letters by
// reason. The sink's workers add to it under mu; the progress line and the
// result read it.
type tally struct {
	mu       sync.Mutex
	lat, e2e Latencies // fetched → stored; input stored → output stored (sampled)
	window   Latencies // fetched → stored since the last takeWindow
	reasons  map[string]int64
}

func newTally() *tally { return &tally{reasons: map[string]int64{}} }

// takeWindow returns the fetched → stored latencies since its last call.
func (t *tally) takeWindow() Latencies {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.window
	t.window = Latencies{}
	return w
}

// results returns copies of the dead letters by reason and the latencies.
func (t *tally) results() (reasons map[string]int64, lat, e2e Latencies) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.reasons), t.lat, t.e2e
}
