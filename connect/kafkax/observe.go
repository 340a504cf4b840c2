package kafkax

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/twmb/franz-go/pkg/kgo"
)

// HeaderCarrier is a record's headers as a [sluice.Propagator] reads and
// writes them: (*kafkax.HeaderCarrier)(&rec.Headers) for a *kgo.Record.
// Keys are matched exactly (Kafka headers are case-sensitive).
type HeaderCarrier []kgo.RecordHeader

// Get returns the value of the first header key, or "".
func (h *HeaderCarrier) Get(key string) string {
	for _, x := range *h {
		if x.Key == key {
			return string(x.Value)
		}
	}
	return ""
}

// Set sets the header key to value alone.
func (h *HeaderCarrier) Set(key, value string) {
	*h = slices.DeleteFunc(*h, func(x kgo.RecordHeader) bool { return x.Key == key })
	*h = append(*h, kgo.RecordHeader{Key: key, Value: []byte(value)})
}

// Keys returns the header keys, in order.
func (h *HeaderCarrier) Keys() []string {
	ks := make([]string, len(*h))
	for i, x := range *h {
		ks[i] = x.Key
	}
	return ks
}

// Describe implements [sluice.Describer]: the record of a receipt as
// spans show it — system "kafka", its topic and partition (a record has
// no ID of its own). A pipeline asks only when it traces.
func (s *Source) Describe(key uint64) (sluice.Message, bool) {
	p, _ := s.tr.lookup(key)
	if p == nil {
		return sluice.Message{}, false
	}
	return sluice.Message{System: "kafka", Destination: p.topic, Partition: strconv.Itoa(int(p.part))}, true
}

// receipt returns the receipt of rec under key, with the trace context
// of its headers when the source propagates.
func (s *Source) receipt(key uint64, rec *kgo.Record) sluice.Receipt {
	r := sluice.NewReceipt(s, key)
	if s.cfg.Propagator == nil || len(rec.Headers) == 0 {
		return r
	}
	bg := context.Background()
	h := HeaderCarrier(rec.Headers)
	if tc := s.cfg.Propagator.Extract(bg, &h); tc != bg {
		r = r.WithTrace(tc)
	}
	return r
}

// inject returns the headers of o's record: o.Headers, and when the sink
// propagates and o.From has a trace context, a copy with it added.
func (s *Sink) inject(o *Out) []kgo.RecordHeader {
	if s.cfg.Propagator == nil {
		return o.Headers
	}
	tc := o.From.Trace()
	if tc == nil {
		return o.Headers
	}
	h := make(HeaderCarrier, len(o.Headers), len(o.Headers)+2)
	copy(h, o.Headers)
	s.cfg.Propagator.Inject(tc, &h)
	return h
}

// Option configures a [Source] and a [Sink] alike: pass it to [NewSource]
// or [NewSink]. [Propagate] and [Logger] are Options; they set the core's
// [sluice.Observe], which every connector's options set.
type Option func(*sluice.Observe)

func (f Option) applySource(c *sourceConfig) { f(&c.observe) }
func (f Option) applySink(c *sinkConfig)     { f(&c.observe) }

// observe is what the Options set, on a source or a sink: the embedded
// field of both configurations.
type observe = sluice.Observe

// Propagate makes a [Source] extract the trace context of each record
// from its headers with p and attach it to the record's receipt
// ([sluice.Receipt.WithTrace]), so that the spans of every stage that
// handles an item derived from it continue its trace (see
// [sluice.Tracing]); and a [Sink] inject the trace context of each Out's
// From receipt into the headers of the record it produces (added to a
// copy of [Out].Headers), so that the trace goes on in whatever consumes
// it. The otelx module makes p from OpenTelemetry's propagators
// (otelx.W3C(): the traceparent, tracestate and baggage headers). A
// record without trace context in its headers gets none from them (the
// trace its Read stage's span begins, when the pipeline traces), and an
// Out whose From has none is produced as it is. A nil p, the default,
// means no propagation and no work per record.
func Propagate(p sluice.Propagator) Option { return func(o *sluice.Observe) { o.Propagator = p } }

// Logger makes a [Source] or a [Sink] log what an operator needs to know
// to l (see the package documentation's "Logs and traces" for the
// records). Nothing is logged per record: failures are counted and
// summarised at most once per [sluice.LogInterval]. No line holds a
// client option's value (SASL credentials among them). A nil l, the
// default, means no logs.
func Logger(l *slog.Logger) Option { return func(o *sluice.Observe) { o.Logger = l } }

// logger writes a source's or a sink's records with its attributes (the
// group, or "sink"). A nil *logger logs nothing.
type logger struct {
	l *slog.Logger

	joined bool // the first assignment was logged as the group joined

	down      sync.Mutex // guards the outage's state
	outage    time.Time  // when the first failed dial of the outage was; zero: none
	dialFails int64
}

func newLogger(l *slog.Logger, attrs ...any) *logger {
	if l == nil {
		return nil
	}
	return &logger{l: l.With(attrs...)}
}

func (g *logger) log(level slog.Level, msg string, attrs ...slog.Attr) {
	if g == nil || !g.l.Enabled(context.Background(), level) {
		return
	}
	g.l.LogAttrs(context.Background(), level, msg, attrs...)
}

// partitions is tps as text: "topic[0 1 2] other[3]", topics sorted.
func partitions(tps map[string][]int32) string {
	var parts []string
	for _, t := range slices.Sorted(maps.Keys(tps)) {
		ps := slices.Sorted(slices.Values(tps[t]))
		parts = append(parts, fmt.Sprintf("%s%v", t, ps))
	}
	return strings.Join(parts, " ")
}

// rebalanced logs an assignment, a revocation or a loss. The first
// assignment is the group joined.
func (g *logger) rebalanced(cl *kgo.Client, what string, tps map[string][]int32) {
	if g == nil || len(tps) == 0 {
		return
	}
	member, gen := cl.GroupMetadata()
	attrs := []slog.Attr{slog.String("partitions", partitions(tps)), slog.String("member", member), slog.Int("generation", int(gen))}
	switch what {
	case "assigned":
		if !g.joined {
			g.joined = true
			g.log(slog.LevelInfo, "group joined", slog.String("member", member), slog.Int("generation", int(gen)))
		}
		g.log(slog.LevelInfo, "partitions assigned", attrs...)
	case "revoked":
		g.log(slog.LevelInfo, "partitions revoked", attrs...)
	case "lost":
		g.log(slog.LevelWarn, "partitions lost", attrs...)
	}
}

// OnBrokerConnect implements kgo.HookBrokerConnect: a failed dial after
// none begins an outage, a dial that succeeds after one ends it. A line
// each, however many dials fail between. A dial cancelled (the client
// closing as it dialled) says nothing of the broker: no outage.
func (g *logger) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	broker := net.JoinHostPort(meta.Host, fmt.Sprint(meta.Port))
	g.down.Lock()
	defer g.down.Unlock()
	switch {
	case err != nil && g.outage.IsZero():
		g.outage, g.dialFails = time.Now(), 1
		g.log(slog.LevelWarn, "broker unreachable", slog.String("broker", broker), slog.String("error", err.Error()))
	case err != nil:
		g.dialFails++
	case !g.outage.IsZero():
		g.log(slog.LevelInfo, "broker reachable again", slog.String("broker", broker),
			sluice.LogDuration("after", time.Since(g.outage)), slog.Int64("failed_dials", g.dialFails))
		g.outage = time.Time{}
	}
}

// tally counts events of one kind and logs them with the core's
// [sluice.Tally]: "count", and the latest event's "error" if it had one.
// A nil *tally counts nothing.
type tally struct{ t sluice.Tally }

func newTally(g *logger, level slog.Level, msg string) *tally {
	if g == nil {
		return nil
	}
	return &tally{sluice.Tally{Logger: g.l, Level: level, Msg: msg}}
}

func (t *tally) add(n int64, err error) {
	switch {
	case t == nil:
	case err != nil:
		t.t.Add(n, slog.String("error", err.Error()))
	default:
		t.t.Add(n)
	}
}

func (t *tally) flush() {
	if t != nil {
		t.t.Flush()
	}
}
