package dash_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dash"
)

// A board serves the page, the event stream and a JSON snapshot. Here a
// script reads /snapshot.json of a finished pipeline; a person would open
// the board's root in a browser while the pipeline runs.
func ExampleHandler() {
	p := sluice.New(context.Background(), sluice.Named("words"))
	src := sluice.FromSlice(p, "words", []string{"a", "bb", "ccc"})
	lens := sluice.Map(p, "length", src, 1, func(_ context.Context, s string) (int, error) { return len(s), nil })
	sluice.Reduce(p, "total", lens, 0, func(acc, n int) int { return acc + n })
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}

	board := dash.Handler(p) // serve it with http.ListenAndServe(addr, board)
	rec := httptest.NewRecorder()
	board.ServeHTTP(rec, httptest.NewRequest("GET", "/snapshot.json", nil))

	var view dash.View
	if err := json.Unmarshal(rec.Body.Bytes(), &view); err != nil {
		fmt.Println(err)
		return
	}
	for _, pv := range view.Pipelines {
		fmt.Printf("%s done=%v bottleneck=%q\n", pv.Name, pv.Done, pv.Bottleneck)
		for _, s := range pv.Stages {
			fmt.Printf("  %-6s %-6s in=%d out=%d\n", s.Name, s.Kind, s.In, s.Out)
		}
		for _, e := range pv.Edges {
			fmt.Printf("  %s → %s: %d items\n", e.From, e.To, e.Sent)
		}
	}
	// Output:
	// words done=true bottleneck=""
	//   words  source in=0 out=3
	//   length map    in=3 out=3
	//   total  reduce in=3 out=0
	//   words → length: 3 items
	//   length → total: 3 items
}

// Bottleneck applies the page's rule to any snapshot: here a stage whose
// input queue is full while the queue after it is nearly empty.
func ExampleBottleneck() {
	snap := sluice.Snapshot{
		Stages: []sluice.StageStats{
			{Name: "read", Kind: "source"},
			{Name: "decode", Kind: "map", InDepth: 2048, InCapacity: 2048},
			{Name: "enrich", Kind: "map", InDepth: 1900, InCapacity: 2048},
			{Name: "write", Kind: "for-each", InDepth: 12, InCapacity: 2048},
		},
		Edges: []sluice.EdgeStats{
			{From: "read", To: "decode", Depth: 2048, Capacity: 2048},
			{From: "decode", To: "enrich", Depth: 1900, Capacity: 2048},
			{From: "enrich", To: "write", Depth: 12, Capacity: 2048},
		},
	}
	if i := dash.Bottleneck(snap); i >= 0 {
		fmt.Println("bottleneck:", snap.Stages[i].Name)
	}
	// Output:
	// bottleneck: enrich
}

// A board can show pipelines that start later, and stop showing them.
func ExampleBoard_Add() {
	board := dash.Handler()
	var runs []*sluice.Pipeline
	for _, name := range []string{"monday", "tuesday"} {
		p := sluice.New(context.Background(), sluice.Named(name))
		sluice.Collect(p, "all", sluice.FromSlice(p, "items", []int{1, 2}))
		board.Add(p) // shown while it runs, and afterwards
		if err := p.Wait(); err != nil {
			fmt.Println(err)
		}
		runs = append(runs, p)
	}
	board.Remove(runs[0])
	for _, pv := range board.View().Pipelines {
		fmt.Println(pv.ID, pv.Name, pv.Done)
	}
	// Output:
	// 1 tuesday true
}

// An EventLog wraps the program's log handler: every record still goes to
// the log, and the board lists the last ones under its pipelines.
func ExampleEvents() {
	events := dash.Events(100, slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // no time, for a stable output
			}
			return a
		}}))
	board := dash.Handler()
	board.ShowEvents(events)

	log := slog.New(events)
	log.Warn("partitions lost", "topic", "market", "partitions", 2)

	for _, e := range board.View().Events {
		fmt.Println(e.Seq, e.Level, e.Message, e.Attrs)
	}
	// Output:
	// level=WARN msg="partitions lost" topic=market partitions=2
	// 1 WARN partitions lost [{topic market} {partitions 2}]
}
