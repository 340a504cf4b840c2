package clickhousex_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/clickhousex"
	"github.com/sluicehq/sluice/metrics"
)

func TestEveryWriterStatsFieldIsReadByAMetric(t *testing.T) {
	if f := metrics.Unread[clickhousex.WriterStats](); len(f) != 0 {
		t.Errorf("no metric reads WriterStats.%v: add one to connect/clickhousex/metrics.go", f)
	}
}

func TestAWritersCountsReachTheExporters(t *testing.T) {
	db := open(t)
	makeTable(t, db, "figures")
	const n = 1000
	var committed settled
	w := clickhousex.NewWriter(db, "figures", eventColumns, eventRow)
	p := sluice.New(ctxT(t, 60*time.Second))
	clickhousex.Insert(p, "store", sluice.FromSlice(p, "events", receipted(events(n), &committed)), w)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	got := map[string]float64{}
	metrics.Read(p.Stats(), func(x metrics.Sample) {
		if strings.HasPrefix(x.Metric.Name, "sluice.clickhouse.") {
			got[x.Metric.Name+"{"+strings.Join(x.Labels[1:], ",")+"}"] = x.Value
		}
	})
	want := map[string]float64{
		"sluice.clickhouse.writer.rows{store}":           n,
		"sluice.clickhouse.writer.inserts{store,ok}":     float64(st.Batches),
		"sluice.clickhouse.writer.inserts{store,failed}": 0,
	}
	if len(got) != len(want) || st.Rows != n || st.Batches < 1 {
		t.Fatalf("got %v (Stats %+v), want %v", got, st, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %v, want %v", k, got[k], v)
		}
	}
}

func TestTheObservingPageListsEveryClickHouseSeries(t *testing.T) {
	if err := metrics.Unnamed("../../docs/observing.md", "sluice.clickhouse."); err != nil {
		t.Error(err)
	}
}
