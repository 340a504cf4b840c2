package observed

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/kafkax"
	"github.com/sluicehq/sluice/prom"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// scraped returns the value of the series name{labels} in a gather of reg.
func scraped(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("the scrape has no series %s%v", name, labels)
	return 0
}

// A transactional Kafka → Kafka pipeline's committed transactions show in
// a prom Collector's scrape, with the source's count, and so do its
// sink's records: the Collector is given the pipeline only.
func TestACollectorScrapesATransactionalSourcesCommittedTransactions(t *testing.T) {
	b, err := servers.Get()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	in, out := fmt.Sprintf("observed-in-%d", time.Now().UnixNano()), fmt.Sprintf("observed-out-%d", time.Now().UnixNano())
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 2, 1, nil, in, out); err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Topic: in, Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	src, err := kafkax.NewSource(ctx, b.Kafka, in+"-group", []string{in}, kafkax.Transactional(in+"-txn", 200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = src.Close() }()
	sink, err := kafkax.NewTxnSink(ctx, src, kafkax.ToTopic(out))
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()

	p := sluice.New(ctx, sluice.Named("copy"))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(prom.NewCollector(p))
	var seen atomic.Int64
	msgs := kafkax.Read(p, "read", src)
	outs := sluice.Map(p, "copy", msgs, 2, func(_ context.Context, m kafkax.Msg) (kafkax.Out, error) {
		seen.Add(1)
		return kafkax.Out{Value: m.Value(), From: m.Receipt}, nil
	})
	kafkax.Produce(p, "write", outs, sink)
	// Epochs of 200 ms: wait for every record and a commit, then drain
	// (which commits the last epoch, if it holds anything).
	deadline := time.Now().Add(time.Minute)
	for seen.Load() < n || src.Stats().TxnCommitted < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %d records seen, source %+v", seen.Load(), src.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := scraped(t, reg, "sluice_kafka_source_transactions_total", map[string]string{"pipeline": "copy", "stage": "read", "outcome": "committed"}); got < 1 {
		t.Errorf("while running: scraped %v committed transactions, want at least the one seen", got)
	}
	p.Drain()
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	st, sk := src.Stats(), sink.Stats()
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sluice_kafka_source_transactions_total", map[string]string{"stage": "read", "outcome": "committed"}, float64(st.TxnCommitted)},
		{"sluice_kafka_source_transactions_total", map[string]string{"stage": "read", "outcome": "aborted"}, float64(st.TxnAborted)},
		{"sluice_kafka_source_transaction_epoch_seconds_total", map[string]string{"stage": "read"}, st.TxnEpochTime.Seconds()},
		{"sluice_kafka_source_transaction_commit_seconds_total", map[string]string{"stage": "read"}, st.TxnCommitTime.Seconds()},
		{"sluice_kafka_source_records_received_total", map[string]string{"stage": "read"}, n},
		{"sluice_kafka_source_records_acked_total", map[string]string{"stage": "read"}, n},
		{"sluice_kafka_sink_records_produced_total", map[string]string{"stage": "write"}, n},
	} {
		c.labels["pipeline"] = "copy"
		if got := scraped(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v: scraped %v, want %v (source %+v, sink %+v)", c.name, c.labels, got, c.want, st, sk)
		}
	}
	if st.TxnCommitted < 1 || sk.Produced != n {
		t.Errorf("source %+v, sink %+v: want a commit and %d records produced", st, sk, n)
	}
}
