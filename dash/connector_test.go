package dash

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

// fakeStats stands for a connector's statistics: dash cannot import a
// connector, so it shows a fake one's, registered as a connector module
// registers its own.
type fakeStats struct {
	Sent, Lost int64
	Waited     time.Duration
}

var _ = metrics.Register(
	metrics.For(metrics.Metric{Name: "sluice.fake.messages", Unit: "{message}", Kind: metrics.Counter, Labels: []string{"result"},
		Help: "Messages the fake connector sent (result=sent) or lost (result=lost)."},
		func(s fakeStats, put metrics.Put) {
			put(float64(s.Sent), "sent")
			put(float64(s.Lost), "lost")
		}),
	metrics.For(metrics.Metric{Name: "sluice.fake.waited", Unit: "s", Kind: metrics.Counter, Help: "Time the fake connector waited."},
		func(s fakeStats, put metrics.Put) { put(s.Waited.Seconds()) }),
)

// A stage with a connector attached shows the connector's figures in the
// snapshot, under "connector"; other stages have none.
func TestSnapshotJSONShowsAStagesConnectorFigures(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("copy"))
	sluice.Collect(p, "store", sluice.FromSlice(p, "in", []int{1, 2}))
	p.AttachConnector("store", new(int), func() any { return fakeStats{Sent: 2, Lost: 1, Waited: 250 * time.Millisecond} })
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	srv, c := serve(t, Handler(p))
	_, body := get(t, c, srv.URL+"/snapshot.json")
	var v View
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	stages := v.Pipelines[0].Stages
	if len(stages) != 2 || stages[0].Connector != nil {
		t.Fatalf("stages %+v: want in without a connector", stages)
	}
	want := []FigureView{
		{Name: "sluice.fake.messages", Labels: "result=sent", Value: 2},
		{Name: "sluice.fake.messages", Labels: "result=lost", Value: 1},
		{Name: "sluice.fake.waited", Value: 0.25},
	}
	got := stages[1].Connector
	if len(got) != len(want) {
		t.Fatalf("store's connector figures %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("figure %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// The live page names the connector in the stage's box and lists its
// figures on hover.
func TestBrowserShowsAStagesConnectorFigures(t *testing.T) {
	path := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(context.Background())
	p := sluice.New(runCtx, sluice.Named("copy"))
	src := sluice.From(p, "in", func(ctx context.Context, e *sluice.Emitter[int]) error {
		e.Send(1)
		e.Flush()
		<-ctx.Done()
		return ctx.Err()
	})
	sluice.ForEach(p, "store", src, 1, func(context.Context, int) error { return nil })
	p.AttachConnector("store", new(int), func() any { return fakeStats{Sent: 7, Waited: 1500 * time.Millisecond} })
	defer func() {
		stop()
		if err := p.Wait(); !errors.Is(err, context.Canceled) {
			t.Errorf("got pipeline error %v, want context.Canceled", err)
		}
	}()
	b, session := openBoard(ctx, t, path, Handler(p))
	const read = `JSON.stringify([...document.querySelectorAll("section[data-pipeline=copy] svg g.stage[data-stage=store] text.connector")].map(t => t.textContent))`
	for {
		var js string
		if err := b.eval(ctx, session, read, &js); err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		var got []string
		if err := json.Unmarshal([]byte(js), &got); err != nil {
			t.Fatalf("reading the page: %v: %q", err, js)
		}
		if len(got) == 1 {
			for _, want := range []string{"fake", "3 figures", "sluice.fake.messages{result=sent} 7", "sluice.fake.waited 1.50 s"} {
				if !strings.Contains(got[0], want) {
					t.Errorf("the store box's connector line reads %q, want %q in it", got[0], want)
				}
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for the connector line; the page shows %q", js)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
