package dash

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// chromium finds the browser: $SLUICE_CHROMIUM, else chromium or
// google-chrome on the PATH. Its absence fails the test: the page is only
// tested if a browser renders it. scripts/test installs Debian's chromium
// when it can.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SLUICE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found (looked for $SLUICE_CHROMIUM, chromium, chromium-browser, google-chrome): " +
		"this test renders the page in a real browser; install it (Debian: apt-get install chromium; " +
		"./scripts/test does so when run as root)")
	return ""
}

// pageState is what the test reads off the rendered page.
type pageState struct {
	Updates int         `json:"updates"`
	Status  string      `json:"status"`
	Rule    string      `json:"rule"`
	Verdict string      `json:"verdict"`
	Stages  []pageStage `json:"stages"` // of the checkout pipeline
	Edges   int         `json:"edges"`  // of the checkout pipeline
	// Events are the texts of the event list's entries, newest first.
	Events []string `json:"events"`
	// Pipelines are the names of the pipelines drawn, in order.
	Pipelines []string `json:"pipelines"`
	// The page's width and the width of what it lays out: wider content
	// means a horizontal scroll.
	InnerWidth  int `json:"innerWidth"`
	ScrollWidth int `json:"scrollWidth"`
}

type pageStage struct {
	Name       string `json:"name"`
	In         int64  `json:"in"`
	Out        int64  `json:"out"`
	ChunkSize  int    `json:"chunk"`
	Failed     int64  `json:"failed"`
	Retries    int64  `json:"retries"`
	Bottleneck bool   `json:"bottleneck"`
	Points     int    `json:"points"` // drawn in its history charts
	Text       string `json:"text"`   // what the stage's box shows
	// Right is where its box ends, in page pixels.
	Right float64 `json:"right"`
}

// readPage collects the drawn stages: their data attributes, their
// highlight (the CSS class that draws the red frame), their text and
// where they are drawn. Until the page has loaded it reports nothing.
const readPage = `!document.getElementById("status") ? "{}" : JSON.stringify({
	updates: Number(document.body.dataset.updates || 0),
	status: document.getElementById("status").textContent,
	rule: document.getElementById("rule").textContent,
	verdict: (document.querySelector("section[data-pipeline=checkout] .verdict") || {}).textContent || "",
	pipelines: [...document.querySelectorAll("section.pipeline")].map(s => s.dataset.pipeline),
	events: [...document.querySelectorAll("#event-list li.event")].map(li => li.textContent),
	edges: document.querySelectorAll("section[data-pipeline=checkout] svg g.edge path").length,
	innerWidth: window.innerWidth,
	scrollWidth: document.documentElement.scrollWidth,
	stages: [...document.querySelectorAll("section[data-pipeline=checkout] svg g.stage")].map(g => ({
		name: g.dataset.stage,
		in: Number(g.dataset.in),
		out: Number(g.dataset.out),
		chunk: Number(g.dataset.chunkSize),
		failed: Number(g.dataset.failed),
		retries: Number(g.dataset.retries),
		bottleneck: g.classList.contains("bottleneck"),
		points: Number((g.querySelector("g.history") || {dataset: {}}).dataset.points || 0),
		text: g.textContent,
		right: g.querySelector("rect.box").getBoundingClientRect().right,
	})),
})`

func (s pageState) stage(name string) (pageStage, bool) {
	for _, st := range s.Stages {
		if st.Name == name {
			return st, true
		}
	}
	return pageStage{}, false
}

// bottleneck is the name of the one stage drawn highlighted, or "" if
// none or several are.
func (s pageState) bottleneck() string {
	name := ""
	for _, st := range s.Stages {
		if st.Bottleneck {
			if name != "" {
				return ""
			}
			name = st.Name
		}
	}
	return name
}

// screenshotPath is where the test leaves its screenshot for people to
// look at: $SLUICE_DASH_SCREENSHOT, or sluice-dash.png in the temp dir.
func screenshotPath() string {
	if p := os.Getenv("SLUICE_DASH_SCREENSHOT"); p != "" {
		return p
	}
	return filepath.Join(os.TempDir(), "sluice-dash.png")
}

// checkout runs seed 004's shape with ints: events → decode (4 workers,
// skipping malformed events) → normalise → batch → enrich → store (retried
// when it fails) → publish → commit. enrich is slow until storeSlow is
// set, store after: the bottleneck moves, as the seed's did from
// enrichment to the ClickHouse writes.
func checkout(ctx context.Context, storeSlow *atomic.Bool, opts ...sluice.Option) *sluice.Pipeline {
	p := sluice.New(ctx, append([]sluice.Option{sluice.Named("checkout")}, opts...)...)
	events := sluice.From(p, "events", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := 0; out.Send(i); i++ {
		}
		return nil
	})
	decoded := sluice.Map(p, "decode", events, 4, func(_ context.Context, v int) (int, error) {
		if v%1000 == 7 {
			return 0, errors.New("malformed")
		}
		return v, nil
	}, sluice.SkipErrors())
	normal := sluice.Map(p, "normalise", decoded, 1, func(_ context.Context, v int) (int, error) { return v % 1000, nil })
	batches := sluice.Batch(p, "batch", normal, 50, 20*time.Millisecond)
	// A batch costs 20 ms at the slow stage, 1 ms at the other.
	work := func(slow bool) {
		if slow {
			time.Sleep(20 * time.Millisecond)
		} else {
			time.Sleep(time.Millisecond)
		}
	}
	enriched := sluice.Map(p, "enrich", batches, 1, func(_ context.Context, b []int) ([]int, error) {
		work(!storeSlow.Load())
		return b, nil
	})
	var calls atomic.Int64
	stored := sluice.Map(p, "store", enriched, 1, func(_ context.Context, b []int) ([]int, error) {
		if calls.Add(1)%20 == 0 { // a transient failure now and then
			return nil, errors.New("connection reset")
		}
		work(storeSlow.Load())
		return b, nil
	}, sluice.Retry(3, time.Millisecond, 2*time.Millisecond))
	published := sluice.Map(p, "publish", stored, 1, func(_ context.Context, b []int) (int, error) { return len(b), nil })
	sluice.Reduce(p, "commit", published, 0, func(acc, n int) int { return acc + n })
	return p
}

func TestBrowserShowsEveryStageMovingAndTheSlowOneAsBottleneck(t *testing.T) {
	path := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	runCtx, stop := context.WithCancel(context.Background())
	var storeSlow atomic.Bool
	// The pipeline logs to an event log that the board shows.
	events := Events(50, nil)
	log := slog.New(events)
	log.Info("checkout starting", "shop", "test")
	p := checkout(runCtx, &storeSlow, sluice.Logger(log))
	defer func() {
		stop()
		if err := p.Wait(); !errors.Is(err, context.Canceled) {
			t.Errorf("got pipeline error %v, want context.Canceled", err)
		}
	}()

	// A second, finished pipeline shares the board.
	board := Handler(p, finished(t, "audit"))
	board.ShowEvents(events)
	srv, _ := serve(t, board)

	b, err := startBrowser(path, t.TempDir())
	if err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	closed := false
	closeBrowser := func() {
		if !closed {
			closed = true
			if err := b.close(); err != nil {
				t.Errorf("closing the browser: %v\n%s", err, b.stderr.String())
			}
		}
	}
	defer closeBrowser()

	session, err := b.open(ctx, srv.URL+"/")
	if err != nil {
		t.Fatalf("opening the page: %v\n%s", err, b.stderr.String())
	}
	read := func() pageState {
		t.Helper()
		var js string
		if err := b.eval(ctx, session, readPage, &js); err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		var s pageState
		if err := json.Unmarshal([]byte(js), &s); err != nil {
			t.Fatalf("reading the page: %v: %q", err, js)
		}
		return s
	}
	// waitFor polls the page until ok accepts what it shows.
	waitFor := func(what string, ok func(pageState) bool) pageState {
		t.Helper()
		var s pageState
		for {
			s = read()
			if ok(s) {
				return s
			}
			select {
			case <-ctx.Done():
				t.Fatalf("gave up waiting until %s; the page shows %s", what, summary(s))
			case <-time.After(50 * time.Millisecond):
			}
		}
	}

	all := []string{"events", "decode", "normalise", "batch", "enrich", "store", "publish", "commit"}
	first := waitFor("the page draws every stage with enrich highlighted", func(s pageState) bool {
		return len(s.Stages) == len(all) && s.bottleneck() == "enrich"
	})
	for _, name := range all {
		if st, ok := first.stage(name); !ok || !strings.Contains(st.Text, name) {
			t.Fatalf("got stages %s, want a box showing %q", summary(first), name)
		}
	}
	if first.Edges != len(all)-1 {
		t.Fatalf("got %d edges drawn, want %d", first.Edges, len(all)-1)
	}
	if want := []string{"checkout", "audit"}; !slices.Equal(first.Pipelines, want) {
		t.Fatalf("got pipelines %q drawn, want %q", first.Pipelines, want)
	}
	if !strings.Contains(first.Rule, "bottleneck") || !strings.Contains(first.Verdict, "enrich") {
		t.Fatalf("got rule %q and verdict %q, want the rule stated and enrich named", first.Rule, first.Verdict)
	}
	// Eight stages at 1400 px: nothing wider than the window.
	if first.InnerWidth != 1400 || first.ScrollWidth > first.InnerWidth {
		t.Fatalf("got a page %d px wide laying out %d px, want 1400 px and nothing wider", first.InnerWidth, first.ScrollWidth)
	}
	for _, st := range first.Stages {
		if st.Right > float64(first.InnerWidth) {
			t.Fatalf("stage %s ends at %v px, past the window's %d px", st.Name, st.Right, first.InnerWidth)
		}
	}

	// A later update: every count has moved, and enrich is still the one.
	second := waitFor("two more updates and every count moved", func(s pageState) bool {
		if s.Updates < first.Updates+2 {
			return false
		}
		for _, name := range all {
			a, _ := first.stage(name)
			b, _ := s.stage(name)
			if b.Out+b.In <= a.Out+a.In {
				return false
			}
		}
		return true
	})
	if en, _ := second.stage("enrich"); !en.Bottleneck || !strings.Contains(en.Text, "BOTTLENECK") {
		t.Fatalf("second reading: got enrich %+v, want it flagged BOTTLENECK", en)
	}
	// Chunk sizes adapt to each stage's cost per item: one batch at a time
	// into enrich (20 ms a batch), more items at a time into normalise. On
	// a loaded machine even normalise can look slow for a while; its limit
	// grows again at the first chunk measured fast, so the page is polled.
	waitFor("enrich takes chunks of one batch and normalise of more than one item", func(s pageState) bool {
		en, _ := s.stage("enrich")
		no, _ := s.stage("normalise")
		return en.ChunkSize == 1 && no.ChunkSize > 1
	})
	// Failed items and retries are shown where there are some.
	counted := waitFor("decode shows failed items and store retries", func(s pageState) bool {
		de, _ := s.stage("decode")
		st, _ := s.stage("store")
		return de.Failed > 0 && strings.Contains(de.Text, "failed ") && st.Retries > 0 && strings.Contains(st.Text, "retries ")
	})
	if no, _ := counted.stage("normalise"); strings.Contains(no.Text, "failed") || strings.Contains(no.Text, "retries") {
		t.Fatalf("got normalise showing %q, want no failed or retries line where there are none", no.Text)
	}
	// The log's records are listed, newest first: decode's failures as a
	// count, not one line per item.
	logged := waitFor("the event list shows the log's first record and decode's failures", func(s pageState) bool {
		n := len(s.Events)
		return n >= 2 && strings.Contains(s.Events[n-1], "checkout starting") &&
			slices.ContainsFunc(s.Events, func(e string) bool {
				return strings.Contains(e, "items failed") && strings.Contains(e, "stage=decode")
			})
	})
	if n := len(logged.Events); !strings.Contains(logged.Events[n-1], "INFO") || !strings.Contains(logged.Events[n-1], "shop=test") {
		t.Fatalf("got the oldest event %q, want its level and attributes shown", logged.Events[n-1])
	}
	if de, _ := logged.stage("decode"); int64(len(logged.Events)) >= de.Failed {
		t.Fatalf("got %d events for %d failed items, want a count per interval, not a line per item", len(logged.Events), de.Failed)
	}
	t.Logf("events: %q", logged.Events)
	t.Logf("first reading (update %d): %s", first.Updates, summary(first))
	t.Logf("second reading (update %d): %s", second.Updates, summary(second))

	// The bottleneck moves to store, and the history charts keep enrich's
	// time as the bottleneck in view.
	// The board's own history must show enrich's input queue full, and
	// store's not, at 2 or more points before the move: wait for them
	// (readings come late on a loaded machine) rather than assume that
	// some seconds of history hold them.
	fullBeforeMove := func() int {
		pv := board.View().Pipelines[0]
		en, st := pv.Stages[4].QueueFillHistory, pv.Stages[5].QueueFillHistory
		k := 0
		for i := range min(len(en), len(st)) {
			if en[i] >= fullAt && !(st[i] >= fullAt) {
				k++
			}
		}
		return k
	}
	for fullBeforeMove() < 2 {
		if ctx.Err() != nil {
			t.Fatalf("the board's history never showed enrich's queue full and store's not at 2 points: %v", board.View().Pipelines[0].Stages[4].QueueFillHistory)
		}
		time.Sleep(100 * time.Millisecond)
	}
	before := waitFor("five seconds of history", func(s pageState) bool {
		en, _ := s.stage("enrich")
		return en.Points >= 5
	})
	storeSlow.Store(true)
	moved := waitFor("store is the bottleneck and the history has grown by six seconds", func(s pageState) bool {
		en, _ := s.stage("enrich")
		b, _ := before.stage("enrich")
		return s.bottleneck() == "store" && en.Points >= b.Points+6
	})
	t.Logf("after the move (update %d): %s", moved.Updates, summary(moved))
	if moved.ScrollWidth > moved.InnerWidth {
		t.Fatalf("got a page %d px wide laying out %d px after the move", moved.InnerWidth, moved.ScrollWidth)
	}
	// The board's own history: it still holds the points before the move
	// where enrich's input queue was full and store's not, and store's
	// queue is full at 2 of its last 3 points.
	pv := board.View().Pipelines[0]
	enrich, store := pv.Stages[4], pv.Stages[5]
	if enrich.Name != "enrich" || store.Name != "store" {
		t.Fatalf("got stages %s and %s at 4 and 5, want enrich and store", enrich.Name, store.Name)
	}
	n := len(store.QueueFillHistory)
	fullBefore, fullAfter := fullBeforeMove(), 0
	for i := max(n-3, 0); i < n; i++ {
		if store.QueueFillHistory[i] >= fullAt {
			fullAfter++
		}
	}
	if fullBefore < 2 || fullAfter < 2 {
		t.Fatalf("history: got enrich %v and store %v; want enrich's queue full and store's not at 2 or more points before the move, store's full at 2 of the last 3",
			enrich.QueueFillHistory, store.QueueFillHistory)
	}

	png, err := b.screenshot(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("got a screenshot starting %q, want a PNG", png[:min(8, len(png))])
	}
	out := screenshotPath()
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", out, len(png))

	// The browser going away ends its event stream.
	if n := board.streams.Load(); n != 1 {
		t.Fatalf("got %d open event streams with the page open, want 1", n)
	}
	closeBrowser()
	pollUntil(t, "the closed page's event stream has ended", func() bool { return board.streams.Load() == 0 })
}

func summary(s pageState) string {
	var parts []string
	for _, st := range s.Stages {
		mark := ""
		if st.Bottleneck {
			mark = " [bottleneck]"
		}
		parts = append(parts, fmt.Sprintf("%s in=%d out=%d chunk=%d failed=%d retries=%d points=%d%s",
			st.Name, st.In, st.Out, st.ChunkSize, st.Failed, st.Retries, st.Points, mark))
	}
	return strings.Join(parts, ", ")
}
