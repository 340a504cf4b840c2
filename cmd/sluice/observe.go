package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cmd/sluice/internal/cli"
	"github.com/sluicehq/sluice/otelx"
)

// observeHelp is the help's lines for the flags observeFlags registers.
const observeHelp = cli.LogHelp + `  --otlp URL         send traces and metrics over OTLP/HTTP to URL, e.g. http://localhost:4318
  --trace-sample R   fraction of traces kept with --otlp, 0 to 1 (default 1)
`

// observeFlags are the flags that say how a run is seen: its log, and
// where its traces and metrics go.
type observeFlags struct {
	logFormat string
	otlpFlags
}

func (o *observeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.logFormat, "log-format", "text", "")
	o.otlpFlags.register(fs)
}

// check returns what is wrong with the flags, or "". set tells which were
// given on the command line.
func (o *observeFlags) check(set map[string]bool) string {
	if msg := cli.CheckLogFormat(o.logFormat); msg != "" {
		return msg
	}
	return o.otlpFlags.check(set)
}

// otlpFlags say where a run's traces and metrics go, if anywhere.
type otlpFlags struct {
	otlp   string
	sample float64
}

func (o *otlpFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&o.otlp, "otlp", "", "")
	fs.Float64Var(&o.sample, "trace-sample", 1, "")
}

// check returns what is wrong with the flags, or "". set tells which were
// given on the command line.
func (o *otlpFlags) check(set map[string]bool) string {
	switch {
	case !(o.sample >= 0 && o.sample <= 1): // NaN too
		return fmt.Sprintf("--trace-sample must be in [0, 1], got %v", o.sample)
	case set["trace-sample"] && o.otlp == "":
		return "--trace-sample goes with --otlp"
	}
	if o.otlp != "" {
		if _, err := otlpBase(o.otlp); err != nil {
			return err.Error()
		}
	}
	return ""
}

// otlpBase is the base URL of an OTLP/HTTP receiver given as --otlp: an
// http or https URL, or host:port for http. The signals' paths (v1/traces,
// v1/metrics) are added to its path.
func otlpBase(s string) (*url.URL, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("--otlp: want an OTLP/HTTP receiver's URL, e.g. http://localhost:4318 or localhost:4318, got %q", s)
	}
	return u, nil
}

func signalURL(base *url.URL, signal string) string {
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/" + signal
	return u.String()
}

// spanQueue is the most spans waiting to be exported; more are dropped.
const spanQueue = 1 << 17

// startObserving makes the run's logger (to stderr, and to the page's
// event list when live is not nil) and, with --otlp, its tracer and
// metrics exporters. Call the observer's Stop once the run is over: it
// sends what is left.
func startObserving(ctx context.Context, o observeFlags, stderr io.Writer, live *cli.Dash) (*cli.Observer, error) {
	ob := cli.StartObserving(o.logFormat, stderr, live)
	if err := startOTLP(ctx, o.otlpFlags, ob, stderr); err != nil {
		return nil, err
	}
	return ob, nil
}

// startOTLP, with --otlp, starts the tracer and metrics exporters and
// adds them to ob: its tracer and propagator, each pipeline's metrics
// (OnShow), and sending what is left at the end, for at most 10 s
// (OnStop). A receiver that fails them is logged, not an error of the
// run: the run did its job.
func startOTLP(ctx context.Context, o otlpFlags, ob *cli.Observer, stderr io.Writer) error {
	if o.otlp == "" {
		return nil
	}
	base, err := otlpBase(o.otlp)
	if err != nil {
		return err
	}
	log := ob.Observe.Logger
	// The exporters' own failures (the receiver down, or one that takes
	// traces only) go to the log, at most a line per sluice.LogInterval.
	otel.SetErrorHandler(&exportErrors{log: log})
	res := resource.NewSchemaless(attribute.String("service.name", "sluice"))
	texp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(signalURL(base, "traces")))
	if err != nil {
		return fmt.Errorf("--otlp: %w", err)
	}
	mexp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(signalURL(base, "metrics")))
	if err != nil {
		return errors.Join(fmt.Errorf("--otlp: %w", err), texp.Shutdown(ctx))
	}
	// A message's trace is kept or dropped as a whole: its producer's
	// decision, carried in its traceparent, holds for every stage's span;
	// a call on an item without one is a trace of its own, kept with
	// probability --trace-sample.
	// The batcher's queue holds a few seconds of spans at a sustained
	// rate: the SDK's default (2048) drops spans under any load.
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res),
		sdktrace.WithBatcher(texp, sdktrace.WithMaxQueueSize(spanQueue), sdktrace.WithMaxExportBatchSize(4096)),
		sdktrace.WithSampler(sdktrace.ParentBased(rootSampler{sdktrace.TraceIDRatioBased(o.sample)})))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(10*time.Second))))
	meters, err := otelx.NewMetrics(mp)
	if err != nil {
		return errors.Join(err, tp.Shutdown(ctx), mp.Shutdown(ctx))
	}
	ob.Observe.Tracer = sampledRoots{otelx.NewTracer(tp, otelx.WithParentSampling()), o.sample}
	ob.Observe.Propagator = otelx.W3C()
	ob.OnShow(meters.Add)
	ob.OnStop(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			log.Warn("OpenTelemetry: the last spans were not sent", "error", err.Error())
		}
		// The provider's last collection reads the pipelines through
		// meters' callback: close meters after it, not before (a callback
		// unregistered first leaves the last export without a series).
		if err := mp.Shutdown(ctx); err != nil {
			log.Warn("OpenTelemetry: the last metrics were not sent", "error", err.Error())
		}
		return meters.Close()
	})
	fmt.Fprintf(stderr, "otlp: traces to %s (sampling %g), metrics to %s every 10 s\n",
		signalURL(base, "traces"), o.sample, signalURL(base, "metrics"))
	return nil
}

// sampledRoots decides itself whether a call on an item that derives from
// no traced message (no parent, no links) starts a trace: with
// probability ratio, as the SDK's TraceIDRatioBased sampler would, but
// without asking the SDK, whose Start costs a span and a context even
// when it drops it. The SDK's sampler (rootSampler) then keeps every such
// root it is asked about.
type sampledRoots struct {
	next  sluice.Tracer
	ratio float64
}

// Start: a source asks it once per item whose message came without a trace
// context (Kind "source"): a dropped item then gets a valid span context
// that is not sampled, so that every later call on it, and what derives
// from it downstream, is dropped too (otelx.WithParentSampling) — one
// decision per item, not one per call.
func (s sampledRoots) Start(ctx context.Context, c sluice.Call) (context.Context, func(error)) {
	if c.Parent == nil && len(c.Links) == 0 && (s.ratio <= 0 || rand.Float64() >= s.ratio) {
		if c.Kind == "source" {
			return trace.ContextWithSpanContext(ctx, unsampled()), endNothing
		}
		return ctx, endNothing
	}
	return s.next.Start(ctx, c)
}

// unsampled returns a span context with random IDs whose trace is not
// sampled.
func unsampled() trace.SpanContext {
	var tid trace.TraceID
	var sid trace.SpanID
	binary.LittleEndian.PutUint64(tid[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(tid[8:], rand.Uint64()|1) // never all zero
	binary.LittleEndian.PutUint64(sid[:], rand.Uint64()|1)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid})
}

func endNothing(error) {}

// rootSampler samples the root spans that reach the SDK: those of calls
// on several items (with links) by ratio, any other (already sampled by
// sampledRoots) always.
type rootSampler struct{ ratio sdktrace.Sampler }

func (r rootSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if len(p.Links) > 0 {
		return r.ratio.ShouldSample(p)
	}
	return sdktrace.AlwaysSample().ShouldSample(p)
}

func (r rootSampler) Description() string { return "sluice roots: " + r.ratio.Description() }

// exportErrors logs the OpenTelemetry SDK's errors: the first at once,
// then at most one line per sluice.LogInterval with how many there were.
type exportErrors struct {
	log *slog.Logger

	mu     sync.Mutex
	count  int64
	logged time.Time
}

func (e *exportErrors) Handle(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.count++
	if now := time.Now(); e.logged.IsZero() || now.Sub(e.logged) >= sluice.LogInterval {
		e.logged = now
		e.log.Warn("OpenTelemetry export failed", "failures", e.count, "error", err.Error())
		e.count = 0
	}
}
