package natsx_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"

	natsx "github.com/sluicehq/sluice/connect/natsx"
)

func TestEverySourceAndSinkStatsFieldIsReadByAMetric(t *testing.T) {
	if f := metrics.Unread[natsx.SourceStats](); len(f) != 0 {
		t.Errorf("no metric reads SourceStats.%v: add one to connect/natsx/metrics.go", f)
	}
	if f := metrics.Unread[natsx.SinkStats](); len(f) != 0 {
		t.Errorf("no metric reads SinkStats.%v: add one to connect/natsx/metrics.go", f)
	}
}

// sample returns the value of the series of s whose metric is named name
// and whose labels after the pipeline's are labels.
func sample(s sluice.Snapshot, name string, labels ...string) (float64, bool) {
	var v float64
	found := false
	metrics.Read(s, func(x metrics.Sample) {
		if x.Metric.Name == name && strings.Join(x.Labels[1:], ",") == strings.Join(labels, ",") {
			v, found = x.Value, true
		}
	})
	return v, found
}

func TestASourcesAndASinksCountsReachTheExporters(t *testing.T) {
	js := serverWith(t, "IN", "OUT")
	const n = 200
	publishN(t, js, "in.x", n)
	ctx := ctxT(t, 60*time.Second)
	src := newSource(t, ctx, js, "IN", "copy", natsx.StopWhenCaughtUp(), natsx.IdleCheck(100*time.Millisecond))
	sink := newSink(t, ctx, js, natsx.ToStream("OUT"))
	p := copyPipeline(ctx, src, sink, nil)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	snap := p.Stats()
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"sluice.nats.source.messages.received", []string{"read"}, n},
		{"sluice.nats.source.messages.acked", []string{"read"}, n},
		{"sluice.nats.source.messages.in_flight", []string{"read"}, 0},
		{"sluice.nats.sink.messages.published", []string{"publish"}, n},
		{"sluice.nats.sink.messages.failed", []string{"publish"}, 0},
	} {
		if got, ok := sample(snap, c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v: got %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, ok := sample(snap, "sluice.nats.source.messages.received", "copy"); ok {
		t.Error("the stage copy, which has no connector, has a NATS source's series")
	}
}

func TestTheObservingPageListsEveryNATSSeries(t *testing.T) {
	if err := metrics.Unnamed("../../docs/observing.md", "sluice.nats."); err != nil {
		t.Error(err)
	}
}
