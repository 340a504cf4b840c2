package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	colmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/internal/cli"
)

func TestObserveFlagsRejectWhatCannotWork(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--log-format", "xml"}, "--log-format must be text or json"},
		{[]string{"serve", "--kafka", "k:1", "--clickhouse", "c:1", "--log-format", "logfmt"}, "--log-format must be text or json"},
		{[]string{"demo", "--trace-sample", "0.5"}, "--trace-sample goes with --otlp"},
		{[]string{"demo", "--otlp", "localhost:4318", "--trace-sample", "2"}, "--trace-sample must be in [0, 1]"},
		{[]string{"demo", "--otlp", "localhost:4318", "--trace-sample", "NaN"}, "--trace-sample must be in [0, 1]"},
		{[]string{"serve", "--kafka", "k:1", "--clickhouse", "c:1", "--otlp", "ftp://x:1"}, "--otlp: want an OTLP/HTTP receiver's URL"},
		{[]string{"demo", "--otlp", "http://x:1/?a=b"}, "--otlp: want an OTLP/HTTP receiver's URL"},
	} {
		code, out, errOut := runCLI(t, c.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || out != "" || len(lines) != 2 || !strings.Contains(lines[0], c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

func TestOTLPURLGetsTheSignalsPaths(t *testing.T) {
	for in, want := range map[string]string{
		"localhost:4318":               "http://localhost:4318/v1/traces",
		"http://127.0.0.1:4318":        "http://127.0.0.1:4318/v1/traces",
		"https://otel.example/ingest/": "https://otel.example/ingest/v1/traces",
	} {
		u, err := otlpBase(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := signalURL(u, "traces"); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

// The demo logs to stderr, as text by default and as JSON lines with
// --log-format json: the pipeline's failed items as a count, its end.
func TestDemoLogsToStderrInTheFormatAsked(t *testing.T) {
	code, out, errOut := runCLI(t, "demo", "--events", "3000", "--lookup", "0", "--malformed", "0.05")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, `level=WARN msg="items failed" pipeline=market stage=decode failed=`) ||
		!strings.Contains(errOut, `level=INFO msg="pipeline finished" pipeline=market`) {
		t.Fatalf("got stderr\n%s\nwant text lines for decode's failed items and the pipeline's end", errOut)
	}
	if strings.Contains(out, "msg=") {
		t.Fatalf("got log lines on stdout:\n%s", out)
	}

	code, out, errOut = runCLI(t, "demo", "--events", "3000", "--lookup", "0", "--malformed", "0.05", "--log-format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var msgs []string
	failed := int64(0)
	for line := range strings.Lines(errOut) {
		var rec struct {
			Msg, Pipeline, Stage string
			Failed               int64
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("got stderr line %q, want JSON: %v", line, err)
		}
		msgs = append(msgs, rec.Msg)
		if rec.Msg == "items failed" && rec.Stage == "decode" {
			failed += rec.Failed
		}
	}
	if failed < 100 || len(msgs) > 10 || msgs[len(msgs)-1] != "pipeline finished" {
		t.Fatalf("got %d lines %q counting %d failed items; want a few lines counting about 150 (5%% of 3000), the last the pipeline's end",
			len(msgs), msgs, failed)
	}
}

// With --dash, the log's records are the page's events too.
func TestLogRecordsAreThePagesEvents(t *testing.T) {
	var stdout, stderr bytes.Buffer
	live, err := cli.StartDash("127.0.0.1:0", &stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Stop()
	ob, err := startObserving(context.Background(), observeFlags{logFormat: "text", otlpFlags: otlpFlags{sample: 1}}, &stderr, live)
	if err != nil {
		t.Fatal(err)
	}
	p := sluice.New(context.Background(), sluice.Named("rejects"), sluice.Logger(ob.Observe.Logger))
	src := sluice.FromSlice(p, "numbers", make([]int, 100))
	sluice.ForEach(p, "reject", src, 1, func(context.Context, int) error { return errors.New("no") }, sluice.SkipErrors())
	ob.Show(p)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	v := live.Board.View()
	var texts []string
	for _, e := range v.Events {
		texts = append(texts, e.Level+" "+e.Message)
	}
	if !strings.Contains(stderr.String(), `msg="items failed" pipeline=rejects stage=reject failed=`) ||
		!strings.Contains(strings.Join(texts, "|"), "WARN items failed") ||
		!strings.Contains(strings.Join(texts, "|"), "INFO pipeline finished") {
		t.Fatalf("got stderr %q and page events %q; want the same records in both", stderr.String(), texts)
	}
	if len(v.Pipelines) != 1 || v.Pipelines[0].Name != "rejects" {
		t.Fatalf("got pipelines %+v on the page, want rejects", v.Pipelines)
	}
}

// otlpReceiver is an OTLP/HTTP receiver that keeps the spans' names.
type otlpReceiver struct {
	mu           sync.Mutex
	spans        map[string]int // by name
	metricPosts  int
	metricNames  map[string]bool
	badRequests  []string
	traceContent string
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err != nil:
		o.badRequests = append(o.badRequests, err.Error())
	case r.Method == http.MethodPost && r.URL.Path == "/otel/v1/traces":
		o.traceContent = r.Header.Get("Content-Type")
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			o.badRequests = append(o.badRequests, "traces: "+err.Error())
			break
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					o.spans[s.Name]++
				}
			}
		}
	case r.Method == http.MethodPost && r.URL.Path == "/otel/v1/metrics":
		if len(body) > 0 {
			o.metricPosts++
		}
		var req colmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			o.badRequests = append(o.badRequests, "metrics: "+err.Error())
			break
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if o.metricNames == nil {
						o.metricNames = map[string]bool{}
					}
					o.metricNames[m.Name] = true
				}
			}
		}
	default:
		o.badRequests = append(o.badRequests, r.Method+" "+r.URL.Path)
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// --otlp sends a span per call of each stage, and the metrics, to an
// OTLP/HTTP receiver; what is left is sent before the command exits.
func TestDemoSendsTracesAndMetricsOverOTLP(t *testing.T) {
	rec := &otlpReceiver{spans: map[string]int{}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	code, out, errOut := runCLI(t, "demo", "--events", "2000", "--lookup", "0", "--malformed", "0.05",
		"--otlp", srv.URL+"/otel", "--trace-sample", "1")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.badRequests) > 0 {
		t.Fatalf("the receiver got requests it cannot take: %q", rec.badRequests)
	}
	// Every event is decoded once: a span each (2000); each batch of up
	// to 500 is enriched once.
	if rec.spans["decode map"] != 2000 || rec.spans["enrich map"] < 4 || rec.spans["publish for-each"] < 4 {
		t.Fatalf("got spans %v, want 2000 \"decode map\" and the batches' enrich and publish spans", rec.spans)
	}
	if rec.traceContent != "application/x-protobuf" || rec.metricPosts < 1 {
		t.Fatalf("got traces as %q and %d metric exports, want protobuf and at least the last one at exit", rec.traceContent, rec.metricPosts)
	}
	// The NATS source's figures come with the pipeline's.
	for _, name := range []string{"sluice.stage.items", "sluice.nats.source.messages.received", "sluice.nats.source.messages.acked"} {
		if !rec.metricNames[name] {
			t.Errorf("got no metric %s among %d exported", name, len(rec.metricNames))
		}
	}
	if !strings.Contains(errOut, "otlp: traces to "+srv.URL+"/otel/v1/traces (sampling 1)") {
		t.Fatalf("got stderr %q, want where the traces go", errOut)
	}
}

// At --trace-sample 0 no span is sent: a call on an item without a
// traced parent is its own trace, and none is kept.
func TestDemoAtSampleZeroSendsNoSpan(t *testing.T) {
	rec := &otlpReceiver{spans: map[string]int{}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	code, out, errOut := runCLI(t, "demo", "--events", "2000", "--lookup", "0", "--otlp", srv.URL+"/otel", "--trace-sample", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.spans) != 0 || rec.metricPosts < 1 {
		t.Fatalf("got spans %v and %d metric exports; want none, and the metrics", rec.spans, rec.metricPosts)
	}
}

// At --trace-sample 0.01 about one call in a hundred on an item without
// a traced parent is kept: 20000 events give about 200 decode spans.
func TestDemoAtOnePercentSendsAboutOneSpanInAHundred(t *testing.T) {
	rec := &otlpReceiver{spans: map[string]int{}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	code, out, errOut := runCLI(t, "demo", "--events", "20000", "--lookup", "0", "--malformed", "0",
		"--otlp", srv.URL+"/otel", "--trace-sample", "0.01")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// Binomial(20000, 0.01): mean 200, standard deviation 14.
	if n := rec.spans["decode map"]; n < 120 || n > 280 {
		t.Fatalf("got %d decode spans of 20000 calls at 1%%, want about 200; all spans: %v", n, rec.spans)
	}
}
