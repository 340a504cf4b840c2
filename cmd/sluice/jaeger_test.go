package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/cmd/sluice/market"
	"github.com/sluicehq/sluice/cmd/sluice/market/onkafka"
)

// The tracing test runs a real Jaeger (scripts/jaeger, which builds it
// once from tools/jaeger: minutes the first time), started on the first
// test that needs it and stopped by TestMain.

type jaeger struct{ otlp, query string }

var (
	jaegerDir   string
	startJaeger = sync.OnceValues(func() (jaeger, error) {
		dir, err := os.MkdirTemp("", "sluice-jaeger-")
		if err != nil {
			return jaeger{}, err
		}
		jaegerDir = dir
		out, err := jaegerCmd("start").Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				err = fmt.Errorf("%w: %s", err, ee.Stderr)
			}
			return jaeger{}, fmt.Errorf("scripts/jaeger start: %w", err)
		}
		var j jaeger
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "JAEGER_OTLP="); ok {
				j.otlp = v
			}
			if v, ok := strings.CutPrefix(sc.Text(), "JAEGER_QUERY="); ok {
				j.query = v
			}
		}
		if j.otlp == "" || j.query == "" {
			return j, fmt.Errorf("scripts/jaeger start printed no addresses: %q", out)
		}
		return j, nil
	})
)

func jaegerCmd(arg string) *exec.Cmd {
	script, _ := filepath.Abs("../../scripts/jaeger")
	cmd := exec.Command(script, arg)
	cmd.Env = append(os.Environ(), "SLUICE_JAEGER_DIR="+filepath.Join(jaegerDir, "run"))
	return cmd
}

// stopJaeger stops what startJaeger started, if anything.
func stopJaeger() {
	if jaegerDir == "" {
		return
	}
	if out, err := jaegerCmd("stop").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "scripts/jaeger stop: %v: %s\n", err, out)
	}
	os.RemoveAll(jaegerDir)
}

func needJaeger(t *testing.T) jaeger {
	t.Helper()
	j, err := startJaeger()
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// headers is a kgo record's headers as OpenTelemetry's propagators read
// and write them.
type headers struct{ r *kgo.Record }

func (h headers) Get(key string) string {
	for _, x := range h.r.Headers {
		if x.Key == key {
			return string(x.Value)
		}
	}
	return ""
}

func (h headers) Set(key, value string) {
	h.r.Headers = slices.DeleteFunc(h.r.Headers, func(x kgo.RecordHeader) bool { return x.Key == key })
	h.r.Headers = append(h.r.Headers, kgo.RecordHeader{Key: key, Value: []byte(value)})
}

func (h headers) Keys() []string {
	var ks []string
	for _, x := range h.r.Headers {
		ks = append(ks, x.Key)
	}
	return ks
}

// One trace per message, from its producer's span to the ClickHouse
// insert: a producer (the OTel SDK, exporting to Jaeger) sends market
// events to Kafka, each under a span of its own and with its traceparent
// header; `sluice serve --otlp` stores them; Jaeger, asked for each
// message's trace, returns the producer's span, a span per stage that
// handled the event (decode, check, encode: children of the producer's
// span), and a span in the message's trace for each batch call that
// handled it (enrich, the ClickHouse insert, the produce downstream),
// each linked to its batch's span. The record produced downstream
// carries the same trace.
func TestServeTracesEachMessageFromItsProducerToClickHouseInJaeger(t *testing.T) {
	s := needServices(t)
	j := needJaeger(t)
	const n = 20
	names := onkafka.NamesFor(fmt.Sprintf("traced%d", time.Now().UnixNano()%1_000_000))
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.kafka))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if err := onkafka.ResetTopics(ctxTest(t, 30*time.Second), adm, 2, names.Group, names.In, names.Out, names.Dead); err != nil {
		t.Fatal(err)
	}
	if err := onkafka.CreateTable(ctxTest(t, 30*time.Second), openCH(t, s.clickhouse), names.Table, true); err != nil {
		t.Fatal(err)
	}
	serve := startCLI(t, "serve", "--kafka", s.kafka, "--clickhouse", s.clickhouse, "--name", names.Group,
		"--otlp", j.otlp, "--log-format", "json")
	awaitGroup(t, adm, names.Group, names.In, 1, 2, 60*time.Second)

	// The producer: its own service in Jaeger, every span kept.
	expClient := &http.Client{Transport: &http.Transport{}}
	defer expClient.CloseIdleConnections()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(j.otlp+"/v1/traces"),
		otlptracehttp.WithHTTPClient(expClient))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "market-producer"))))
	tracer := tp.Tracer("sluice-test")
	prop := propagation.TraceContext{}
	traceOf := map[string]trace.SpanContext{} // by event id
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range n {
		ctx, span := tracer.Start(context.Background(), "produce "+names.In, trace.WithSpanKind(trace.SpanKindProducer))
		v := market.Generate(nil, rng, i, time.Now().UnixNano(), 0)
		rec := &kgo.Record{Topic: names.In, Key: market.EventKey(v), Value: v}
		prop.Inject(ctx, headers{rec})
		if err := cl.ProduceSync(ctxTest(t, 10*time.Second), rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		span.End()
		id, _, _ := strings.Cut(string(v), ",")
		traceOf[id] = span.SpanContext()
	}
	if err := tp.Shutdown(ctxTest(t, 10*time.Second)); err != nil {
		t.Fatalf("sending the producer's spans: %v", err)
	}
	good, dead := expected(t, s.kafka, names.In)
	if len(good)+len(dead) != n || len(good) == 0 {
		t.Fatalf("input topic: %d good and %d dead events, want %d in all", len(good), len(dead), n)
	}

	// Wait until they are all in ClickHouse, then stop the service: it
	// sends its last spans as it exits.
	db := openCH(t, s.clickhouse)
	for deadline := time.Now().Add(60 * time.Second); ; {
		var ids uint64
		if err := db.QueryRowContext(ctxTest(t, 10*time.Second), "SELECT uniqExact(id) FROM "+names.Table).Scan(&ids); err != nil {
			t.Fatal(err)
		}
		if ids == uint64(len(good)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ClickHouse: %d ids after 60 s, want %d\n%s", ids, len(good), serve.out())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The records produced downstream carry their event's trace.
	for _, rec := range readTopic(t, s.kafka, names.Out) {
		id, _, _ := strings.Cut(string(rec.Value), ",")
		want, ok := traceOf[id]
		got := trace.SpanContextFromContext(prop.Extract(context.Background(), headers{rec}))
		if !ok || got.TraceID() != want.TraceID() {
			t.Errorf("downstream record of event %s: got trace %v (traceparent %q), want its producer's %v",
				id, got.TraceID(), headers{rec}.Get("traceparent"), want.TraceID())
		}
	}
	if err := serve.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := serve.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("sluice serve exited %d after SIGTERM, want 0:\n%s", code, serve.out())
	}

	// Each good event's trace in Jaeger.
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	stages := []string{"decode map", "check map", "encode map"} // children of the producer's span
	batches := []string{"enrich map", "store for-each-chunk", "publish for-each-chunk"}
	checked := 0
	for id := range good {
		sc := traceOf[id]
		var tr *jaegerTrace
		var missing []string
		for deadline := time.Now().Add(30 * time.Second); ; {
			tr = getTrace(t, client, j.query, sc.TraceID().String())
			missing = missingSpans(tr, append(append([]string{"produce " + names.In}, stages...), batches...))
			if len(missing) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if len(missing) > 0 {
			t.Fatalf("event %s: Jaeger's trace %s lacks %q; it has %s", id, sc.TraceID(), missing, describe(tr))
		}
		byName := map[string]jaegerSpan{}
		for _, sp := range tr.Spans {
			byName[sp.OperationName] = sp
		}
		producer := byName["produce "+names.In]
		if producer.SpanID != sc.SpanID().String() || tr.Processes[producer.ProcessID].ServiceName != "market-producer" {
			t.Fatalf("event %s: got producer span %+v, want span %s of market-producer", id, producer, sc.SpanID())
		}
		for _, name := range append(slices.Clone(stages), batches...) {
			sp := byName[name]
			if sp.parent() != producer.SpanID || tr.Processes[sp.ProcessID].ServiceName != "sluice" {
				t.Fatalf("event %s: span %q has parent %q in service %q, want the producer's span %s in sluice: %s",
					id, name, sp.parent(), tr.Processes[sp.ProcessID].ServiceName, producer.SpanID, describe(tr))
			}
		}
		// A batch call's span in the message's trace links the batch's
		// own span, in a trace of its own that links every message. A
		// call on a batch of this one message is simply its trace's
		// span (checked above), with nothing to link.
		for _, name := range batches {
			links := byName[name].linksOut()
			if len(links) == 0 && byName[name].tag("sluice.items") == "1" {
				continue
			}
			if len(links) != 1 {
				t.Fatalf("event %s: span %q links %q, want the batch's span", id, name, links)
			}
			batchTrace, batchSpan, _ := strings.Cut(links[0], "/")
			bt := getTrace(t, client, j.query, batchTrace)
			if bt == nil || !slices.ContainsFunc(bt.Spans, func(s jaegerSpan) bool {
				return s.SpanID == batchSpan && s.OperationName == name &&
					slices.Contains(s.linksOut(), sc.TraceID().String()+"/"+sc.SpanID().String())
			}) {
				t.Fatalf("event %s: the batch span %s of %q is not in Jaeger linking the producer's span: %s", id, links[0], name, describe(bt))
			}
		}
		checked++
	}
	t.Logf("%d messages traced in Jaeger from the producer through %q and the batch calls %q", checked, stages, batches)
}
