package dash

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// finished runs a small pipeline to completion: 1000 numbers, doubled by
// 2 workers, collected.
func finished(t *testing.T, name string) *sluice.Pipeline {
	t.Helper()
	xs := make([]int, 1000)
	p := sluice.New(context.Background(), sluice.Named(name))
	src := sluice.FromSlice(p, "numbers", xs)
	dbl := sluice.Map(p, "double", src, 2, func(_ context.Context, v int) (int, error) { return 2 * v, nil })
	sluice.Collect(p, "collect", dbl)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return p
}

// stuck starts a pipeline whose middle stage waits until release is
// called, so that its input queue fills and everything upstream blocks.
// release also ends the pipeline and waits for it.
func stuck(t *testing.T) (p *sluice.Pipeline, release func()) {
	t.Helper()
	gate := make(chan struct{})
	p = sluice.New(context.Background(), sluice.Named("stuck"))
	src := sluice.From(p, "numbers", func(ctx context.Context, out *sluice.Emitter[int]) error {
		for i := range 100_000 {
			if !out.Send(i) {
				return ctx.Err()
			}
		}
		return nil
	}, sluice.Buffer(512))
	held := sluice.Map(p, "held", src, 1, func(ctx context.Context, v int) (int, error) {
		select {
		case <-gate:
		case <-ctx.Done():
		}
		return v, nil
	})
	sluice.ForEach(p, "discard", held, 1, func(context.Context, int) error { return nil })
	return p, func() {
		close(gate)
		if err := p.Wait(); err != nil {
			t.Errorf("pipeline: %v", err)
		}
	}
}

// pollUntil calls cond until it returns true, failing the test after 10 s.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after 10 s waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serve starts an HTTP server for h and a client of its own; both are
// closed when the test ends, so no connection goroutine outlives it.
func serve(t *testing.T, h http.Handler) (*httptest.Server, *http.Client) {
	t.Helper()
	srv := httptest.NewServer(h)
	tr := &http.Transport{}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	return srv, &http.Client{Transport: tr}
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func keys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func checkKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := keys(m); !slices.Equal(got, want) {
		t.Fatalf("%s fields: got %q, want %q", what, got, want)
	}
}

func TestSnapshotJSONKeepsItsFieldNames(t *testing.T) {
	board := Handler(finished(t, "first"))
	srv, c := serve(t, board)
	resp, body := get(t, c, srv.URL+"/snapshot.json")
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/json" {
		t.Fatalf("got status %d, content type %q; want 200, application/json", resp.StatusCode, ct)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatalf("got invalid JSON %q: %v", body, err)
	}
	checkKeys(t, "view", raw, "taken", "bottleneck_rule", "pipelines")
	pl := raw["pipelines"].([]any)[0].(map[string]any)
	checkKeys(t, "pipeline", pl, "id", "name", "done", "error", "elapsed_seconds", "window_seconds",
		"bottleneck", "history_from_second", "stages", "edges")
	checkKeys(t, "stage", pl["stages"].([]any)[1].(map[string]any), "name", "kind", "workers", "running",
		"waiting", "busy", "in", "out", "dropped", "failed", "retries", "in_per_second", "out_per_second", "utilization",
		"busy_seconds", "blocked_seconds", "throttled_seconds", "queue_depth", "queue_capacity", "queue_fill", "chunk_size",
		"latency_p50_seconds", "latency_p99_seconds", "latency_samples", "bottleneck",
		"items_per_second_history", "queue_fill_history")
	checkKeys(t, "edge", pl["edges"].([]any)[0].(map[string]any), "from", "to", "sent", "received",
		"dropped", "depth", "capacity", "fill", "policy", "per_second")
}

func TestSnapshotJSONCountsEveryItemOfAFinishedPipeline(t *testing.T) {
	board := Handler(finished(t, "first"), finished(t, "second"))
	srv, c := serve(t, board)
	_, body := get(t, c, srv.URL+"/snapshot.json")
	var v View
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Pipelines) != 2 || v.Pipelines[0].Name != "first" || v.Pipelines[1].Name != "second" {
		t.Fatalf("got pipelines %+v, want first and second", v.Pipelines)
	}
	for _, pv := range v.Pipelines {
		if !pv.Done || pv.Error != "" || pv.Bottleneck != "" {
			t.Fatalf("%s: got done=%v error=%q bottleneck=%q, want done, no error, no bottleneck",
				pv.Name, pv.Done, pv.Error, pv.Bottleneck)
		}
		var got []string
		for _, s := range pv.Stages {
			got = append(got, s.Name)
			if s.Kind != "source" && s.In != 1000 {
				t.Fatalf("%s/%s: got in=%d, want 1000", pv.Name, s.Name, s.In)
			}
		}
		if want := []string{"numbers", "double", "collect"}; !slices.Equal(got, want) {
			t.Fatalf("got stages %q, want %q", got, want)
		}
		if e := pv.Edges[0]; e.From != "numbers" || e.To != "double" || e.Sent != 1000 || e.Received != 1000 {
			t.Fatalf("got first edge %+v, want numbers→double carrying 1000", e)
		}
	}
	if v.Pipelines[0].ID == v.Pipelines[1].ID {
		t.Fatalf("got the same id %d for both pipelines", v.Pipelines[0].ID)
	}
}

func TestSnapshotJSONNamesTheStuckStage(t *testing.T) {
	p, release := stuck(t)
	defer release()
	board := Handler(p)
	// The edge's chunk count can show the chunk the source is handing
	// over a moment before its item count does: wait for both.
	pollUntil(t, "the held stage is the bottleneck, its queue full", func() bool {
		pv := board.View().Pipelines[0]
		return pv.Bottleneck == "held" && pv.Stages[1].QueueFill >= fullAt
	})
	srv, c := serve(t, board)
	_, body := get(t, c, srv.URL+"/snapshot.json")
	var v View
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	pv := v.Pipelines[0]
	if pv.Bottleneck != "held" || !pv.Stages[1].Bottleneck || pv.Stages[1].QueueFill < fullAt {
		t.Fatalf("got bottleneck %q, held stage %+v; want held, with its queue at least half full", pv.Bottleneck, pv.Stages[1])
	}
	if pv.Done || v.Rule != BottleneckRule {
		t.Fatalf("got done=%v, rule %q; want a running pipeline and the rule", pv.Done, v.Rule)
	}
}

func TestRatesComeFromTheReadingsBeforeAndNow(t *testing.T) {
	stage := func(in int64, busy time.Duration) sluice.StageStats {
		return sluice.StageStats{Name: "s", Kind: "map", Workers: 2, In: in, Out: in, Busy: busy}
	}
	base := sluice.Snapshot{Elapsed: 1 * time.Second, Stages: []sluice.StageStats{stage(100, 0)},
		Edges: []sluice.EdgeStats{{From: "s", Sent: 100}}}
	cur := sluice.Snapshot{Elapsed: 3 * time.Second, Stages: []sluice.StageStats{stage(300, 2*time.Second)},
		Edges: []sluice.EdgeStats{{From: "s", Sent: 500}}}
	pv := viewOf(&base, cur, new(history))
	s := pv.Stages[0]
	if pv.WindowSeconds != 2 || s.InPerSecond != 100 || s.OutPerSecond != 100 || s.Utilization != 0.5 {
		t.Fatalf("got window %v s, in %v/s, out %v/s, utilization %v; want 2 s, 100/s, 100/s, 0.5",
			pv.WindowSeconds, s.InPerSecond, s.OutPerSecond, s.Utilization)
	}
	if e := pv.Edges[0]; e.PerSecond != 200 {
		t.Fatalf("got edge rate %v/s, want 200/s", e.PerSecond)
	}
	// Without a base, rates run from the pipeline's start.
	pv = viewOf(nil, cur, new(history))
	if s := pv.Stages[0]; pv.WindowSeconds != 3 || s.InPerSecond != 100 {
		t.Fatalf("got window %v s, in %v/s; want 3 s, 100/s", pv.WindowSeconds, s.InPerSecond)
	}
}

func TestLatencyQuantilesComeFromTheWindowOrElseTheWholeRun(t *testing.T) {
	bounds := []time.Duration{time.Millisecond, 10 * time.Millisecond, 0}
	hist := func(counts ...uint64) sluice.Histogram {
		h := sluice.Histogram{Bounds: bounds, Counts: counts}
		for _, c := range counts {
			h.Count += c
		}
		return h
	}
	at := func(h sluice.Histogram, elapsed time.Duration) sluice.Snapshot {
		return sluice.Snapshot{Elapsed: elapsed, Stages: []sluice.StageStats{{Name: "s", Kind: "map", Workers: 1, Latency: h}}}
	}
	// Early samples were fast; those in the window are all slow.
	base, cur := at(hist(100, 0, 0), time.Second), at(hist(100, 10, 0), 2*time.Second)
	s := viewOf(&base, cur, new(history)).Stages[0]
	// Quantiles are interpolated inside their bucket: the window's lie in
	// (1 ms, 10 ms], the whole run's in [0, 1 ms].
	slow := func(v float64) bool { return v > 0.001 && v <= 0.010 }
	if s.LatencySamples != 10 || !slow(s.LatencyP50Seconds) || !slow(s.LatencyP99Seconds) || s.LatencyP99Seconds < s.LatencyP50Seconds {
		t.Fatalf("got %d samples, p50 %v s, p99 %v s; want 10, both in (0.001, 0.01], p50 ≤ p99", s.LatencySamples, s.LatencyP50Seconds, s.LatencyP99Seconds)
	}
	// No sample in the window: the whole run's.
	cur = at(hist(100, 0, 0), 2*time.Second)
	s = viewOf(&base, cur, new(history)).Stages[0]
	if s.LatencySamples != 100 || s.LatencyP50Seconds <= 0 || s.LatencyP50Seconds > 0.001 {
		t.Fatalf("got %d samples, p50 %v s; want 100, in (0, 0.001]", s.LatencySamples, s.LatencyP50Seconds)
	}
}

// readEvent reads one Server-Sent Event's data, skipping other fields.
func readEvent(t *testing.T, r *bufio.Reader) (string, error) {
	t.Helper()
	var data string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		line = strings.TrimRight(line, "\n")
		if line == "" && data != "" {
			return data, nil
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data += d
		}
	}
}

func TestEventsStreamSendsViewsUntilTheClientGoesAway(t *testing.T) {
	p, release := stuck(t)
	defer release()
	board := Handler(p)
	srv, c := serve(t, board)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/events?every=100ms", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("got content type %q, want text/event-stream", ct)
	}
	r := bufio.NewReader(resp.Body)
	var taken []time.Time
	for range 3 {
		data, err := readEvent(t, r)
		if err != nil {
			t.Fatal(err)
		}
		var v View
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Fatalf("got event data %q: %v", data, err)
		}
		if len(v.Pipelines) != 1 || v.Pipelines[0].Name != "stuck" || len(v.Pipelines[0].Stages) != 3 {
			t.Fatalf("got view %+v, want the stuck pipeline with 3 stages", v)
		}
		taken = append(taken, v.Taken)
	}
	if !taken[0].Before(taken[2]) {
		t.Fatalf("got readings taken at %v, want them moving on", taken)
	}
	if n := board.streams.Load(); n != 1 {
		t.Fatalf("got %d open streams, want 1", n)
	}
	cancel() // the client goes away
	pollUntil(t, "the stream's handler has returned", func() bool { return board.streams.Load() == 0 })
}

func TestCloseEndsEveryStreamAfterAFinalView(t *testing.T) {
	board := Handler(finished(t, "p"))
	srv, c := serve(t, board)
	resp, err := c.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	if _, err := readEvent(t, r); err != nil {
		t.Fatal(err)
	}
	board.Close()
	board.Close() // twice is fine
	// Past the final view, the stream ends; events sent before Close may
	// still be in flight, so read until the end.
	var last string
	for {
		data, err := readEvent(t, r)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = data
	}
	if !strings.Contains(last, `"done":true`) {
		t.Fatalf("got final view %q, want the done pipeline", last)
	}
	pollUntil(t, "no stream is open", func() bool { return board.streams.Load() == 0 })
	// A stream opened after Close sends one view and ends.
	_, body := get(t, c, srv.URL+"/events")
	if n := strings.Count(body, "data: "); n != 1 {
		t.Fatalf("got %d views after Close, want 1: %q", n, body)
	}
}

// TestEventsAnswersHEADWithItsHeadersAlone: HEAD /events (what GET routes
// answer too) returns the stream's headers at once rather than streaming
// until the client goes away.
func TestEventsAnswersHEADWithItsHeadersAlone(t *testing.T) {
	board := Handler()
	defer board.Close()
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		board.ServeHTTP(rec, httptest.NewRequest("HEAD", "/events", nil))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a hang, not a speed check
		board.Close()
		<-done
		t.Fatal("HEAD /events was still streaming after 10 s")
	}
	if ct := rec.Header().Get("Content-Type"); rec.Code != http.StatusOK || ct != "text/event-stream" || rec.Body.Len() != 0 {
		t.Fatalf("HEAD /events: %d, Content-Type %q, body %q; want 200, text/event-stream, nothing", rec.Code, ct, rec.Body.String())
	}
}

func TestEventsRejectsAPeriodOutOfRange(t *testing.T) {
	board := Handler()
	for _, every := range []string{"1ms", "1h", "soon"} {
		rec := httptest.NewRecorder()
		board.ServeHTTP(rec, httptest.NewRequest("GET", "/events?every="+every, nil))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), every) {
			t.Fatalf("every=%s: got %d %q, want 400 naming the bad value", every, rec.Code, rec.Body.String())
		}
	}
}

func TestPageLoadsOnlyItsOwnEmbeddedAssets(t *testing.T) {
	srv, c := serve(t, Handler())
	absolute := regexp.MustCompile(`(?i)(src|href|url)\s*[=(]\s*["']?\s*(https?:)?//`)
	for path, ct := range map[string]string{
		"/":          "text/html; charset=utf-8",
		"/app.js":    "text/javascript; charset=utf-8",
		"/style.css": "text/css; charset=utf-8",
	} {
		resp, body := get(t, c, srv.URL+path)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ct {
			t.Fatalf("%s: got %d %q, want 200 %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), ct)
		}
		if m := absolute.FindString(body); m != "" {
			t.Fatalf("%s refers to another host: %q", path, m)
		}
		if path == "/" {
			for _, ref := range []string{`src="app.js"`, `href="style.css"`} {
				if !strings.Contains(body, ref) {
					t.Fatalf("page lacks %s", ref)
				}
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
				t.Fatalf("got Content-Security-Policy %q, want default-src 'self'", csp)
			}
		}
	}
	if resp, _ := get(t, c, srv.URL+"/nothing-here"); resp.StatusCode != 404 {
		t.Fatalf("got %d for an unknown path, want 404", resp.StatusCode)
	}
}

func TestBoardWorksBehindAPathPrefix(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/debug/pipelines/", http.StripPrefix("/debug/pipelines", Handler(finished(t, "p"))))
	srv, c := serve(t, mux)
	for _, path := range []string{"/debug/pipelines/", "/debug/pipelines/app.js", "/debug/pipelines/snapshot.json"} {
		if resp, _ := get(t, c, srv.URL+path); resp.StatusCode != 200 {
			t.Fatalf("%s: got %d, want 200", path, resp.StatusCode)
		}
	}
}

func TestAddShowsAPipelineOnceAndRemoveTakesItOff(t *testing.T) {
	a, b := finished(t, "a"), finished(t, "b")
	board := Handler(a)
	board.Add(b)
	board.Add(a)
	names := func() (ns []string) {
		for _, pv := range board.View().Pipelines {
			ns = append(ns, pv.Name)
		}
		return ns
	}
	if got := names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("got %q, want [a b]", got)
	}
	board.Remove(a)
	board.Remove(a)
	if got := names(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("got %q after Remove, want [b]", got)
	}
}

func TestAddPanicsOnANilPipeline(t *testing.T) {
	defer func() {
		if msg, _ := recover().(string); !strings.HasPrefix(msg, "dash: ") || !strings.Contains(msg, "nil") {
			t.Fatalf("got panic %q, want one starting with dash: and naming nil", msg)
		}
	}()
	Handler(nil)
}

func TestReadingsAreSharedBetweenClients(t *testing.T) {
	p, release := stuck(t)
	defer release()
	board := Handler(p)
	board.View()
	board.View() // under 100 ms later: the same reading
	if n := len(board.entries[p].hist); n != 1 {
		t.Fatalf("got %d readings after two quick views, want 1", n)
	}
}

func TestRatesAreOverTheNewestReadingAtLeastAWindowOld(t *testing.T) {
	at := func(ms ...int) (hist []sluice.Snapshot) {
		for _, m := range ms {
			hist = append(hist, sluice.Snapshot{Elapsed: time.Duration(m) * time.Millisecond})
		}
		return hist
	}
	for _, c := range []struct {
		hist   []sluice.Snapshot
		kept   int
		baseMs int // -1: no base
	}{
		{at(0), 1, -1},
		{at(0, 500), 2, -1},
		{at(0, 500, 1000), 3, 0},
		{at(0, 500, 1000, 1400), 4, 0},
		{at(0, 500, 1000, 1500), 3, 500},
		{at(0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100, 3000), 2, 1100},
	} {
		kept, base := prune(c.hist)
		baseMs := -1
		if base != nil {
			baseMs = int(base.Elapsed.Milliseconds())
		}
		if len(kept) != c.kept || baseMs != c.baseMs {
			t.Fatalf("%d readings: got %d kept, base at %d ms; want %d kept, base at %d ms",
				len(c.hist), len(kept), baseMs, c.kept, c.baseMs)
		}
	}
}

func TestSnapshotJSONShowsAnAutoStagesCountAndWhy(t *testing.T) {
	p := sluice.New(context.Background(), sluice.Named("auto"))
	src := sluice.FromSlice(p, "numbers", make([]int, 100))
	dbl := sluice.Map(p, "double", src, 3, func(_ context.Context, v int) (int, error) { return 2 * v, nil }, sluice.Auto(2, 8))
	sluice.Collect(p, "collect", dbl)
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
	if st.Name != "double" || st.Auto == nil || st.Auto.Min != 2 || st.Auto.Max != 8 || st.Auto.Reason == "" || st.Workers < 2 || st.Workers > 8 {
		t.Fatalf("got stage %q, workers %d, auto %+v; want double with Auto 2–8, a reason, and a count within", st.Name, st.Workers, st.Auto)
	}
	if v.Pipelines[0].Stages[0].Auto != nil {
		t.Fatalf("a source's auto = %+v, want none", v.Pipelines[0].Stages[0].Auto)
	}
}

func TestAddPanicsOnASecondPipelineOfTheSameName(t *testing.T) {
	a, b := sluice.New(context.Background(), sluice.Named("twin")), sluice.New(context.Background(), sluice.Named("twin"))
	for _, p := range []*sluice.Pipeline{a, b} {
		sluice.Collect(p, "all", sluice.FromSlice(p, "src", []int{1}))
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	board := Handler(a)
	board.Add(a) // again: nothing
	defer func() {
		if msg, _ := recover().(string); !strings.HasPrefix(msg, "dash: ") || !strings.Contains(msg, `"twin"`) {
			t.Fatalf("got panic %q, want one starting with dash: and naming twin", msg)
		}
	}()
	board.Add(b)
}
