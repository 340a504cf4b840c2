package dash

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"
)

// EventLog is a [slog.Handler] that keeps the last records logged through
// it, for a [Board] to show beside its pipelines ([Board.ShowEvents]), and
// passes each on to the handler it wraps: the page lists the same records
// as the log. Make one with [Events]; the zero EventLog is not usable.
// Its methods are safe for concurrent use, and the handlers that
// WithAttrs and WithGroup return keep their records in the same log.
//
//	events := dash.Events(100, slog.NewTextHandler(os.Stderr, nil))
//	board.ShowEvents(events)
//	p := sluice.New(ctx, sluice.Logger(slog.New(events)))
//
// Cost: on top of the wrapped handler, a record kept costs its attributes
// formatted as text (a few hundred nanoseconds and a few allocations for a
// line of sluice's); a record the wrapped handler does not enable costs
// nothing.
type EventLog struct {
	next   slog.Handler // nil: keep only, at Info and above
	kept   *eventRing
	attrs  []EventAttr // from WithAttrs, keys already prefixed
	prefix string      // the groups from WithGroup, each followed by "."
}

// Event is one record of an [EventLog], as the page and the JSON show it.
type Event struct {
	// Seq numbers the log's records from 1, in the order they were kept.
	Seq     uint64      `json:"seq"`
	Time    time.Time   `json:"time"`
	Level   string      `json:"level"` // DEBUG, INFO, WARN, ERROR (slog.Level's String)
	Message string      `json:"message"`
	Attrs   []EventAttr `json:"attrs"`
}

// EventAttr is one attribute of an [Event]: a key (a group's attributes
// are "group.key") and its value as text.
type EventAttr struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type eventRing struct {
	mu   sync.Mutex
	buf  []Event // a ring of cap n; the oldest at next once full
	next int
	seq  uint64
}

// Events returns an EventLog that keeps the last n records it is given and
// passes every record to next. It enables what next enables; with a nil
// next it keeps records of level Info and above and passes them nowhere.
// It panics if n < 1.
func Events(n int, next slog.Handler) *EventLog {
	if n < 1 {
		panic("dash: Events must keep at least 1 record, got " + strconv.Itoa(n))
	}
	return &EventLog{next: next, kept: &eventRing{buf: make([]Event, 0, n)}}
}

// Enabled reports whether the wrapped handler takes records of level.
func (l *EventLog) Enabled(ctx context.Context, level slog.Level) bool {
	if l.next == nil {
		return level >= slog.LevelInfo
	}
	return l.next.Enabled(ctx, level)
}

// Handle keeps r, then hands it to the wrapped handler and returns what
// that returns.
func (l *EventLog) Handle(ctx context.Context, r slog.Record) error {
	e := Event{Time: r.Time, Level: r.Level.String(), Message: r.Message,
		Attrs: make([]EventAttr, 0, len(l.attrs)+r.NumAttrs())}
	e.Attrs = append(e.Attrs, l.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		e.Attrs = appendAttr(e.Attrs, l.prefix, a)
		return true
	})
	l.kept.add(e)
	if l.next == nil {
		return nil
	}
	return l.next.Handle(ctx, r)
}

// WithAttrs returns a handler that adds attrs to every record, in the
// same log.
func (l *EventLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return l
	}
	c := *l
	c.attrs = slices.Clip(l.attrs)
	for _, a := range attrs {
		c.attrs = appendAttr(c.attrs, l.prefix, a)
	}
	if l.next != nil {
		c.next = l.next.WithAttrs(attrs)
	}
	return &c
}

// WithGroup returns a handler that puts the attributes of later records
// in group name, in the same log.
func (l *EventLog) WithGroup(name string) slog.Handler {
	if name == "" {
		return l
	}
	c := *l
	c.prefix = l.prefix + name + "."
	if l.next != nil {
		c.next = l.next.WithGroup(name)
	}
	return &c
}

// Last returns the records kept, oldest first: at most the n given to
// [Events], the newest ones.
func (l *EventLog) Last() []Event {
	k := l.kept
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]Event, 0, len(k.buf))
	out = append(out, k.buf[k.next:]...)
	return append(out, k.buf[:k.next]...)
}

func (k *eventRing) add(e Event) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seq++
	e.Seq = k.seq
	if len(k.buf) < cap(k.buf) {
		k.buf = append(k.buf, e)
		return
	}
	k.buf[k.next] = e
	k.next = (k.next + 1) % len(k.buf)
}

// appendAttr appends a, resolved, to attrs as text: a group's attributes
// each under "group.key", an empty attribute not at all (as slog's own
// handlers do).
func appendAttr(attrs []EventAttr, prefix string, a slog.Attr) []EventAttr {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return attrs
	}
	if a.Value.Kind() == slog.KindGroup {
		inner := prefix
		if a.Key != "" {
			inner += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			attrs = appendAttr(attrs, inner, g)
		}
		return attrs
	}
	var v string
	if a.Value.Kind() == slog.KindTime {
		v = a.Value.Time().Format(time.RFC3339Nano)
	} else {
		v = a.Value.String()
	}
	return append(attrs, EventAttr{Key: prefix + a.Key, Value: v})
}

// ShowEvents makes the board show the records of l: the page lists them
// under the pipelines, newest first, and /snapshot.json and each /events
// message carry them as [View.Events]. A nil l shows none again.
func (b *Board) ShowEvents(l *EventLog) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = l
}
