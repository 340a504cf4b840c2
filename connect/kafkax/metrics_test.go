package kafkax_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/kafkax"
	"github.com/sluicehq/sluice/metrics"
)

func TestEverySourceAndSinkStatsFieldIsReadByAMetric(t *testing.T) {
	if f := metrics.Unread[kafkax.SourceStats](); len(f) != 0 {
		t.Errorf("no metric reads SourceStats.%v: add one to connect/kafkax/metrics.go", f)
	}
	if f := metrics.Unread[kafkax.SinkStats](); len(f) != 0 {
		t.Errorf("no metric reads SinkStats.%v: add one to connect/kafkax/metrics.go", f)
	}
	for _, m := range metrics.List() {
		if m.Connector() && !strings.HasPrefix(m.Name, "sluice.kafka.source.") && !strings.HasPrefix(m.Name, "sluice.kafka.sink.") {
			t.Errorf("metric %s: want the names of kafkax's metrics under sluice.kafka.source. or sluice.kafka.sink.", m.Name)
		}
	}
}

// samples returns the values of the series of s whose metric is named
// name, keyed by their label values after the pipeline's.
func samples(s sluice.Snapshot, name string) map[string]float64 {
	got := map[string]float64{}
	metrics.Read(s, func(x metrics.Sample) {
		if x.Metric.Name == name {
			got[strings.Join(x.Labels[1:], ",")] = x.Value
		}
	})
	return got
}

func TestATransactionalSourcesTransactionsReachTheExporters(t *testing.T) {
	in, out := newTopic(t, 2), newTopic(t, 2)
	const n = 300
	produceN(t, in, n)
	src := txnSource(t, "txn-metrics", []string{in}, time.Hour)
	sink := txnSink(t, src, kafkax.ToTopic(out))

	p := sluice.New(ctxT(t, time.Minute), sluice.Named("copy"))
	var seen atomic.Int64
	msgs := kafkax.Read(p, "read", src)
	outs := sluice.Map(p, "copy", msgs, 2, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		seen.Add(1)
		return copyOut(m), nil
	})
	kafkax.Produce(p, "write", outs, sink)
	eventually(t, time.Minute, "every record read", func() bool { return seen.Load() >= n })
	if got := samples(p.Stats(), "sluice.kafka.source.records.received"); got["read"] != n {
		t.Errorf("while running: got received %v, want %d for the stage read", got, n)
	}
	p.Drain()
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	snap := p.Stats()
	st, sk := src.Stats(), sink.Stats()
	if st.TxnCommitted != 1 || st.TxnAborted != 0 || sk.Produced != n {
		t.Fatalf("source %+v, sink %+v: want the drain's one commit of %d records", st, sk, n)
	}
	for _, c := range []struct {
		name string
		want map[string]float64
	}{
		{"sluice.kafka.source.transactions", map[string]float64{"read,committed": 1, "read,aborted": 0}},
		{"sluice.kafka.source.records.received", map[string]float64{"read": n}},
		{"sluice.kafka.source.records.acked", map[string]float64{"read": n}},
		{"sluice.kafka.source.transaction.epoch", map[string]float64{"read": st.TxnEpochTime.Seconds()}},
		{"sluice.kafka.source.transaction.commit", map[string]float64{"read": st.TxnCommitTime.Seconds()}},
		{"sluice.kafka.sink.records.produced", map[string]float64{"write": n}},
		{"sluice.kafka.sink.records.failed", map[string]float64{"write": 0}},
	} {
		got := samples(snap, c.name)
		if len(got) != len(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s{%s}: got %v, want %v", c.name, k, got[k], v)
			}
		}
	}
	if st.TxnEpochTime <= 0 || st.TxnCommitTime <= 0 {
		t.Errorf("source %+v: want a positive epoch and commit time", st)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestTheObservingPageListsEveryKafkaSeries(t *testing.T) {
	if err := metrics.Unnamed("../../docs/observing.md", "sluice.kafka."); err != nil {
		t.Error(err)
	}
}
