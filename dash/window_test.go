package dash

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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

// The live page shows a Window stage's figures in its box: the
// watermark's lag, the open windows and keys, the late items.
func TestBrowserShowsAWindowStagesFigures(t *testing.T) {
	path := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Three symbols, each with a window still open (the watermark is at
	// 2.9 s), one item too late for its window; the source then waits.
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	type tick struct {
		sym string
		ms  int
	}
	ticks := []tick{{"a", 100}, {"b", 200}, {"c", 300}, {"a", 2900}, {"b", 2950}, {"c", 2990}, {"a", 1200}}
	runCtx, stop := context.WithCancel(context.Background())
	p := sluice.New(runCtx, sluice.Named("bars"))
	src := sluice.From(p, "trades", func(ctx context.Context, e *sluice.Emitter[tick]) error {
		for _, x := range ticks {
			e.Send(x)
		}
		e.Flush()
		<-ctx.Done()
		return ctx.Err()
	})
	w := sluice.Window(p, "vwap", src, 2, sluice.WindowSpec[tick, string, int]{
		Windows: sluice.Tumbling(time.Second),
		Key:     func(x tick) string { return x.sym },
		Time:    func(x tick) time.Time { return t0.Add(time.Duration(x.ms) * time.Millisecond) },
		Fold:    func(n *int, _ tick) { *n++ },
	})
	sluice.ForEach(p, "store", w, 1, func(context.Context, sluice.Pane[string, int]) error { return nil })
	defer func() {
		stop()
		if err := p.Wait(); !errors.Is(err, context.Canceled) {
			t.Errorf("got pipeline error %v, want context.Canceled", err)
		}
	}()
	b, session := openBoard(ctx, t, path, Handler(p))
	const readWindow = `JSON.stringify([...document.querySelectorAll("section[data-pipeline=bars] svg g.stage[data-stage=vwap]")].map(g => ({
		text: g.textContent, keys: Number(g.dataset.keys), open: Number(g.dataset.open),
		late: Number(g.dataset.late), lag: Number(g.dataset.watermarkLag),
	})))`
	type shown struct {
		Text       string
		Keys, Open int
		Late       int
		Lag        float64
	}
	var got []shown
	for {
		var js string
		if err := b.eval(ctx, session, readWindow, &js); err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		got = nil
		if err := json.Unmarshal([]byte(js), &got); err != nil {
			t.Fatalf("reading the page: %v: %q", err, js)
		}
		// Symbol a's window [1, 2) is gone: its item at 1.2 s is late.
		if len(got) == 1 && got[0].Open == 3 && got[0].Keys == 3 && got[0].Late == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for the window figures; the page shows %+v", got)
		case <-time.After(50 * time.Millisecond):
		}
	}
	s := got[0]
	if s.Lag < time.Since(t0.Add(3*time.Second)).Seconds()-60 {
		t.Fatalf("watermark lag %v s shown, want about %v s", s.Lag, time.Since(t0).Seconds())
	}
	for _, want := range []string{"watermark lag", "1 partition, 0 idle", "open 3 windows", "keys 3", "1 dropped"} {
		if !strings.Contains(s.Text, want) {
			t.Fatalf("the vwap box shows %q, want %q in it", s.Text, want)
		}
	}
}
