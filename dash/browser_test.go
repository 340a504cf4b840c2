package dash

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	// Pipelines are the names of the pipelines drawn, in order.
	Pipelines []string `json:"pipelines"`
}

type pageStage struct {
	Name       string `json:"name"`
	In         int64  `json:"in"`
	Out        int64  `json:"out"`
	Bottleneck bool   `json:"bottleneck"`
	Text       string `json:"text"` // what the stage's box shows
}

// readPage collects the drawn stages: their data attributes, their
// highlight (the CSS class that draws the red frame) and their text.
// Until the page has loaded it reports nothing.
const readPage = `!document.getElementById("status") ? "{}" : JSON.stringify({
	updates: Number(document.body.dataset.updates || 0),
	status: document.getElementById("status").textContent,
	rule: document.getElementById("rule").textContent,
	verdict: (document.querySelector("section[data-pipeline=checkout] .verdict") || {}).textContent || "",
	pipelines: [...document.querySelectorAll("section.pipeline")].map(s => s.dataset.pipeline),
	edges: document.querySelectorAll("section[data-pipeline=checkout] svg g.edge path").length,
	stages: [...document.querySelectorAll("section[data-pipeline=checkout] svg g.stage")].map(g => ({
		name: g.dataset.stage,
		in: Number(g.dataset.in),
		out: Number(g.dataset.out),
		bottleneck: g.classList.contains("bottleneck"),
		text: g.textContent,
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

// screenshotPath is where the test leaves its screenshot for people to
// look at: $SLUICE_DASH_SCREENSHOT, or sluice-dash.png in the temp dir.
func screenshotPath() string {
	if p := os.Getenv("SLUICE_DASH_SCREENSHOT"); p != "" {
		return p
	}
	return filepath.Join(os.TempDir(), "sluice-dash.png")
}

func TestBrowserShowsEveryStageMovingAndTheSlowOneAsBottleneck(t *testing.T) {
	path := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// numbers → parse (2 workers) → slow (1 worker, ~200 µs an item) → sum.
	// The slow stage's input fills; parse and numbers wait for room.
	runCtx, stop := context.WithCancel(context.Background())
	p := sluice.New(runCtx, sluice.Named("checkout"))
	src := sluice.From(p, "numbers", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := 0; out.Send(i); i++ {
		}
		return nil
	})
	parsed := sluice.Map(p, "parse", src, 2, func(_ context.Context, v int) (int, error) { return v % 1000, nil })
	slow := sluice.Map(p, "slow", parsed, 1, func(_ context.Context, v int) (int, error) {
		time.Sleep(200 * time.Microsecond) // the work this stage is too slow at
		return v, nil
	})
	sluice.Reduce(p, "sum", slow, 0, func(acc, v int) int { return acc + v })
	defer func() {
		stop()
		if err := p.Wait(); !errors.Is(err, context.Canceled) {
			t.Errorf("got pipeline error %v, want context.Canceled", err)
		}
	}()

	// A second, finished pipeline shares the board.
	board := Handler(p, finished(t, "audit"))
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
				t.Fatalf("gave up waiting until %s; the page shows %+v", what, s)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}

	all := []string{"numbers", "parse", "slow", "sum"}
	first := waitFor("the page draws every stage with slow highlighted", func(s pageState) bool {
		sl, _ := s.stage("slow")
		return len(s.Stages) == len(all) && sl.Bottleneck
	})
	for _, name := range all {
		st, ok := first.stage(name)
		if !ok || !strings.Contains(st.Text, name) {
			t.Fatalf("got stages %+v, want a box showing %q", first.Stages, name)
		}
		if st.Bottleneck != (name == "slow") {
			t.Fatalf("stage %s: got highlighted=%v, want only slow highlighted", name, st.Bottleneck)
		}
	}
	if first.Edges != 3 {
		t.Fatalf("got %d edges drawn, want 3", first.Edges)
	}
	if want := []string{"checkout", "audit"}; !slices.Equal(first.Pipelines, want) {
		t.Fatalf("got pipelines %q drawn, want %q", first.Pipelines, want)
	}
	if !strings.Contains(first.Rule, "bottleneck") || !strings.Contains(first.Verdict, "slow") {
		t.Fatalf("got rule %q and verdict %q, want the rule stated and slow named", first.Rule, first.Verdict)
	}

	// A later update: every count has moved, and slow is still the one.
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
	if sl, _ := second.stage("slow"); !sl.Bottleneck || !strings.Contains(sl.Text, "BOTTLENECK") {
		t.Fatalf("second reading: got slow %+v, want it flagged BOTTLENECK", sl)
	}
	// Chunk sizes adapt to each stage's cost per item, and the boxes say so:
	// one item at a time into slow (~200 µs an item), more into parse. A
	// stage's chunk size follows its measured time per item, which on a
	// loaded machine (race detector, other packages' tests, the browser)
	// can make even parse look slow for a while; its limit grows again at
	// the first chunk measured fast, so the page is polled until it shows
	// that, as it is for slow's.
	waitFor("slow takes chunks of one item", func(s pageState) bool {
		sl, _ := s.stage("slow")
		return strings.Contains(sl.Text, "chunks of 1latency") || strings.Contains(sl.Text, "chunks of 1BOTTLENECK")
	})
	waitFor("parse takes chunks of more than one item", func(s pageState) bool {
		pa, _ := s.stage("parse")
		return strings.Contains(pa.Text, "chunks of ") && !strings.Contains(pa.Text, "chunks of 1latency")
	})
	t.Logf("first reading (update %d): %s", first.Updates, summary(first))
	t.Logf("second reading (update %d): %s", second.Updates, summary(second))

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
		parts = append(parts, fmt.Sprintf("%s in=%d out=%d%s", st.Name, st.In, st.Out, mark))
	}
	return strings.Join(parts, ", ")
}
