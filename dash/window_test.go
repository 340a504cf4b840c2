package dash

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// A Window stage's event time shows in the snapshot: its window figures
// under "window".
func TestSnapshotJSONShowsAWindowStage(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	p := sluice.New(context.Background(), sluice.Named("win"))
	ms := []int{100, 1500, 900, 3000, 10}
	w := sluice.Window(p, "count", sluice.FromSlice(p, "in", ms), 1, sluice.WindowSpec[int, struct{}, int]{
		Windows:  sluice.Tumbling(time.Second),
		Time:     func(v int) time.Time { return t0.Add(time.Duration(v) * time.Millisecond) },
		Fold:     func(n *int, _ int) { *n++ },
		Lateness: time.Second,
	})
	sluice.Collect(p, "store", w)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	srv, c := serve(t, Handler(p))
	_, body := get(t, c, srv.URL+"/snapshot.json")
	var v View
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	st := v.Pipelines[0].Stages[1]
	want := WindowView{Partitions: 1, Emitted: 4, Updated: 1, LateDropped: 1}
	if st.Name != "count" || st.Window == nil {
		t.Fatalf("stage %s: window %+v", st.Name, st.Window)
	}
	got := *st.Window
	got.WatermarkLagSeconds = 0 // the wall clock's
	if got != want {
		t.Fatalf("window %+v, want %+v", got, want)
	}
}
