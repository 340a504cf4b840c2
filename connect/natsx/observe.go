package natsx

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sluicehq/sluice"
)

// HeaderCarrier is a message's headers as a [sluice.Propagator] reads
// and writes them: natsx.HeaderCarrier(h) for h of type nats.Header.
// Keys are matched exactly (NATS headers are case-sensitive).
type HeaderCarrier nats.Header

// Get returns the first value of key, or "".
func (h HeaderCarrier) Get(key string) string { return nats.Header(h).Get(key) }

// Set sets key to value alone. It panics on a nil h, as a nil map does.
func (h HeaderCarrier) Set(key, value string) { h[key] = []string{value} }

// Keys returns the keys h holds.
func (h HeaderCarrier) Keys() []string {
	ks := make([]string, 0, len(h))
	for k := range h {
		ks = append(ks, k)
	}
	return ks
}

// extract returns the trace context that p finds in h, or nil when it
// finds none.
func extract(p sluice.Propagator, h nats.Header) context.Context {
	if len(h) == 0 {
		return nil
	}
	bg := context.Background()
	if tc := p.Extract(bg, HeaderCarrier(h)); tc != bg {
		return tc
	}
	return nil
}

// Propagate makes a [Source] extract the trace context of each message
// from its headers with p and attach it to the message's receipt
// ([sluice.Receipt.WithTrace]), so that the spans of every stage that
// handles an item derived from it continue its trace (see
// [sluice.Tracing]); and a [Sink] inject the trace context of each
// message's From receipt into the headers it publishes, so that the trace
// goes on in whatever reads them. The otelx module makes p from
// OpenTelemetry's propagators (otelx.W3C(): the traceparent, tracestate
// and baggage headers). Header names are matched exactly, as NATS does.
// A message without a trace context in its headers gets none, and an Out
// whose From has none is published as it is. A nil p, the default, means
// no propagation and no work per message.
func Propagate(p sluice.Propagator) Option { return func(o *sluice.Observe) { o.Propagator = p } }

// Logger makes a [Source] or a [Sink] log what an operator needs to know
// to l (see the package documentation's "Logs and traces" for the
// records). Nothing is logged per message: failures are counted and
// summarised at most once per [sluice.LogInterval]. No line shows the
// password, token or user information of the connection's server URLs.
// A nil l, the default, means no logs.
func Logger(l *slog.Logger) Option { return func(o *sluice.Observe) { o.Logger = l } }

// Describe implements [sluice.Describer]: the message of a receipt not
// settled yet as spans show it — system "nats", its subject, and its ID
// ([Msg.ID]). A pipeline asks only when it traces.
func (s *Source) Describe(key uint64) (sluice.Message, bool) {
	m, ok := s.acks.pending.get(key)
	if !ok {
		return sluice.Message{}, false
	}
	return sluice.Message{System: "nats", Destination: m.Subject(), ID: Msg{m: m}.ID()}, true
}

// logger writes a source's or a sink's records: with its attributes
// (stream, consumer, …) and with every secret of its connection hidden.
// A nil *logger logs nothing.
type logger struct {
	l       *slog.Logger
	secrets []string // longest first
}

// newLogger returns the logger of what uses nc, or nil for a nil l.
func newLogger(l *slog.Logger, nc *nats.Conn, attrs ...any) *logger {
	if l == nil {
		return nil
	}
	var secrets []string
	if nc != nil {
		o := nc.Opts
		for _, u := range append([]string{o.Url}, o.Servers...) {
			if u != "" {
				_, s := redact(u)
				secrets = append(secrets, s...)
			}
		}
		for _, s := range []string{o.Password, o.Token} {
			if s != "" {
				secrets = append(secrets, s)
			}
		}
		// nats.go's ConnectedUrlRedacted shows a token given as the
		// URL's user.
		if u := nc.ConnectedUrl(); u != "" {
			shown, _ := redact(u)
			attrs = append(attrs, slog.String("server", shown))
		}
	}
	return &logger{l: l.With(attrs...), secrets: longestFirst(secrets)}
}

// log writes a record at level unless l does not take it.
func (g *logger) log(level slog.Level, msg string, attrs ...slog.Attr) {
	if g == nil || !g.l.Enabled(context.Background(), level) {
		return
	}
	g.l.LogAttrs(context.Background(), level, msg, attrs...)
}

// err is the "error" attribute of err, with the connection's secrets
// hidden.
func (g *logger) err(err error) slog.Attr { return slog.String("error", g.scrub(err.Error())) }

// scrub returns msg with the connection's secrets hidden.
func (g *logger) scrub(msg string) string {
	for _, s := range g.secrets {
		msg = strings.ReplaceAll(msg, s, "xxxxx")
	}
	return msg
}

// tally returns a [sluice.Tally] of g's events of one kind (failed
// writes, failed acks, parked messages): a line at most once per
// sluice.LogInterval, with "count", the events since the last line, and
// the latest event's attributes. Nil when g is.
func (g *logger) tally(level slog.Level, msg string) *sluice.Tally {
	if g == nil {
		return nil
	}
	return &sluice.Tally{Logger: g.l, Level: level, Msg: msg}
}

// outage logs the outages of a source's Read or a sink: "outage begun"
// when the server first fails to answer (the connection is lost, or a
// request goes unanswered), "outage ended", with how long it lasted, when
// it answers again. The connection's status watcher and the Read's loop
// both report to it; a nil *outage does nothing.
type outage struct {
	g      *logger
	isDown atomic.Bool // read without the lock on every message

	mu    sync.Mutex
	since time.Time // when the outage began
}

func (g *logger) outage() *outage {
	if g == nil {
		return nil
	}
	return &outage{g: g}
}

// errConnLost is the error an outage begun by a lost connection shows.
var errConnLost = errors.New("lost the connection to the server")

// down notes that the server did not answer, err saying how.
func (o *outage) down(err error) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.isDown.Load() {
		return
	}
	o.isDown.Store(true)
	o.since = time.Now()
	o.g.log(slog.LevelWarn, "outage begun", o.g.err(err))
}

// up notes that the server answered.
func (o *outage) up() {
	if o == nil || !o.isDown.Load() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.isDown.Load() {
		return
	}
	o.isDown.Store(false)
	o.g.log(slog.LevelInfo, "outage ended", sluice.LogDuration("outage", time.Since(o.since)))
}

// watch reports the connection's losses and returns to o until ch, a
// status listener of the connection, is removed (which closes it).
func (o *outage) watch(ch <-chan nats.Status) {
	for st := range ch {
		switch st {
		case nats.CONNECTED:
			o.up()
		case nats.DISCONNECTED, nats.RECONNECTING:
			o.down(errConnLost)
		}
	}
}
