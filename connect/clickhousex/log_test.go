package clickhousex_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"

	"github.com/sluicehq/sluice/connect/clickhousex"
)

// record is one log record: its level, message and every attribute as
// text, those given to With included.
type record struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (r record) String() string { return fmt.Sprintf("%v %q %v", r.level, r.msg, r.attrs) }

// recorder is a slog.Handler that keeps every record, and the text a
// text handler writes for it (where a secret would show).
type recorder struct {
	mu   *sync.Mutex
	recs *[]record
	text *bytes.Buffer
	th   slog.Handler
	with []slog.Attr
}

func newRecorder() (*recorder, *slog.Logger) {
	buf := new(bytes.Buffer)
	r := &recorder{mu: new(sync.Mutex), recs: new([]record), text: buf, th: slog.NewTextHandler(buf, nil)}
	return r, slog.New(r)
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(ctx context.Context, rec slog.Record) error {
	attrs := make(map[string]string)
	for _, a := range r.with {
		attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.recs = append(*r.recs, record{rec.Level, rec.Message, attrs})
	return r.th.Handle(ctx, rec)
}

func (r *recorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *r
	c.with = append(append([]slog.Attr(nil), r.with...), as...)
	c.th = r.th.WithAttrs(as)
	return &c
}

func (r *recorder) WithGroup(string) slog.Handler { panic("clickhousex logs use no groups") }

func (r *recorder) records() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]record(nil), *r.recs...)
}

func (r *recorder) find(msg string) []record {
	var out []record
	for _, rec := range r.records() {
		if rec.msg == msg {
			out = append(out, rec)
		}
	}
	return out
}

func (r *recorder) textString() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text.String()
}

// counted adds up the "count" of records.
func counted(t *testing.T, recs []record) int64 {
	t.Helper()
	var n int64
	for _, rec := range recs {
		v, err := strconv.ParseInt(rec.attrs["count"], 10, 64)
		if err != nil {
			t.Fatalf("%v: count is not a number: %v", rec, err)
		}
		n += v
	}
	return n
}

// waitCounted waits until the records msg count want events (the last
// line is written as the pipeline ends, on a goroutine of its own).
func waitCounted(t *testing.T, r *recorder, msg string, want int64) []record {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs := r.find(msg)
		got := counted(t, recs)
		if got == want {
			return recs
		}
		if got > want || time.Now().After(deadline) {
			t.Fatalf("records %q count %d; want %d: %v", msg, got, want, recs)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A storm of failed inserts — a missing table, each insert retried —
// is logged as counts: the first line at once, the rest when the
// pipeline ends, and one line per LogInterval at most in between.
func TestFailedInsertStormIsLoggedAsABoundedCount(t *testing.T) {
	db := open(t)
	if _, err := db.ExecContext(ctxT(t, 20*time.Second), "DROP TABLE IF EXISTS never"); err != nil {
		t.Fatal(err)
	}
	rec, log := newRecorder()
	w := clickhousex.NewWriter(db, "never", eventColumns, eventRow, clickhousex.Logger(log))
	p := sluice.New(ctxT(t, time.Minute))
	// Ten rows an insert, each tried three times, then skipped.
	clickhousex.Insert(p, "store", sluice.FromSlice(p, "events", events(1000)), w,
		sluice.Gather(10), sluice.Retry(3, time.Millisecond, time.Millisecond), sluice.SkipErrors())
	start := time.Now()
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	failed := w.Stats().Failed
	if failed < 300 {
		t.Fatalf("Stats %+v; want at least 300 failed inserts", w.Stats())
	}
	lines := waitCounted(t, rec, "inserts failed", failed)
	if max := 2 + int(took/sluice.LogInterval); len(lines) > max {
		t.Fatalf("%d lines for %d failed inserts in %v; want at most %d: %v", len(lines), failed, took, max, lines)
	}
	r := lines[0]
	if r.level != slog.LevelWarn || r.attrs["table"] != "never" || r.attrs["rows"] == "" || !strings.Contains(r.attrs["error"], "doesn't exist") {
		t.Fatalf("%v: want a Warn naming the table, the rows and the error", r)
	}
	if all := rec.records(); len(all) != len(lines) {
		t.Fatalf("records besides the failures: %v", all)
	}
}

// With SlowInsert at a nanosecond every insert is slow: counted, not a
// line each.
func TestSlowInsertsAreCounted(t *testing.T) {
	db := open(t)
	makeTable(t, db, "slow")
	rec, log := newRecorder()
	w := clickhousex.NewWriter(db, "slow", eventColumns, eventRow, clickhousex.Logger(log), clickhousex.SlowInsert(time.Nanosecond))
	p := sluice.New(ctxT(t, time.Minute))
	clickhousex.Insert(p, "store", sluice.FromSlice(p, "events", events(100)), w, sluice.Gather(10))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	lines := waitCounted(t, rec, "slow inserts", w.Stats().Batches)
	if len(lines) > 2 || lines[0].level != slog.LevelWarn || lines[0].attrs["elapsed"] == "" || lines[0].attrs["rows"] == "" {
		t.Fatalf("lines %v; want at most 2 Warns with rows and elapsed", lines)
	}
}

func TestRowsLeftOutAreCounted(t *testing.T) {
	db := open(t)
	makeTable(t, db, "left_out")
	row := func(e event) []any {
		if e.ID%2 == 1 {
			return []any{"odd", e.Name} // not a UInt64
		}
		return eventRow(e)
	}
	rec, log := newRecorder()
	w := clickhousex.NewWriter(db, "left_out", eventColumns, row, clickhousex.Logger(log))
	if err := w.Write(ctxT(t, 30*time.Second), events(10)); err == nil {
		t.Fatal("Write of rows with bad values: no error")
	}
	lines := rec.find("rows left out")
	if len(lines) != 1 || lines[0].attrs["count"] != "1" || lines[0].attrs["table"] != "left_out" {
		t.Fatalf("lines %v; want the first at once", rec.records())
	}
	if n := len(rec.find("inserts failed")); n != 0 {
		t.Fatalf("%d lines of failed inserts; a bad value is a row left out, not a failed insert: %v", n, rec.records())
	}
}

// addUser adds a user with password to the tests' server and waits until
// the server has read it.
func addUser(t *testing.T, user, password string) {
	t.Helper()
	path := filepath.Join(serverDir, "users.xml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("<"+user+">")) {
		entry := fmt.Sprintf("<%s><password>%s</password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></%s>\n    </users>", user, password, user)
		b = bytes.Replace(b, []byte("</users>"), []byte(entry), 1)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := open(t).ExecContext(ctxT(t, 20*time.Second), "SYSTEM RELOAD CONFIG"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		db, err := clickhousex.Open(ctxT(t, 10*time.Second), needServer(t), clickhousex.User(user), clickhousex.Password(password))
		if err == nil {
			db.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server did not take user %s within 30s: %v", user, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The pool's connections die with a restarted server: the insert after
// the restart replaces them, and that is logged; no line shows the
// password the pool was opened with.
func TestDeadConnectionsReplacedAreLoggedAndNoLineShowsThePassword(t *testing.T) {
	const user, password = "spy", "pw-s3cret-77"
	addUser(t, user, password)
	db, err := clickhousex.Open(ctxT(t, 20*time.Second), needServer(t), clickhousex.User(user), clickhousex.Password(password))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	admin := open(t)
	makeTable(t, admin, "spied")
	rec, log := newRecorder()
	w := clickhousex.NewWriter(db, "spied", eventColumns, eventRow, clickhousex.Logger(log))
	missing := clickhousex.NewWriter(db, "no_such_table", eventColumns, eventRow, clickhousex.Logger(log))
	ctx := ctxT(t, time.Minute)
	if err := w.Write(ctx, events(10)); err != nil {
		t.Fatal(err)
	}
	if _, err := clickhouse("restart"); err != nil {
		t.Fatal(err)
	}
	// Wait for the server on a pool of its own, so that db's connections
	// stay as the restart left them.
	if err := open(t).PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, events(10)); err != nil {
		t.Fatalf("the write after the restart: %v", err)
	}
	for range 3 {
		if err := missing.Write(ctx, events(1)); err == nil {
			t.Fatal("a write to a missing table succeeded")
		}
	}
	replaced := rec.find("dead connections replaced")
	if len(replaced) != 1 || replaced[0].level != slog.LevelInfo || replaced[0].attrs["table"] != "spied" || replaced[0].attrs["error"] == "" {
		t.Fatalf("records %v; want one Info line of dead connections replaced", rec.records())
	}
	if n := len(rec.find("inserts failed")); n != 1 {
		t.Fatalf("%d lines of failed inserts for 3 in a row; want the first alone: %v", n, rec.records())
	}
	if text := rec.textString(); strings.Contains(text, "s3cret") {
		t.Fatalf("a line shows the password:\n%s", text)
	}
}

// traceKey holds a message's trace id in a context.
type traceKey struct{}

// spanTracer records each span the pipeline starts: its stage, kind,
// items and the trace ids of its links.
type spanTracer struct {
	mu    sync.Mutex
	spans []sluice.Call
	links [][]string
}

func (s *spanTracer) Start(ctx context.Context, c sluice.Call) (context.Context, func(error)) {
	var ids []string
	for _, l := range c.Links {
		ids = append(ids, l.Value(traceKey{}).(string))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c.Links = nil // valid only during Start
	s.spans = append(s.spans, c)
	s.links = append(s.links, ids)
	return ctx, func(error) {}
}

// An insert is one call of the Insert stage: with a Tracer, one span per
// insert, linked to the trace of every item's message.
func TestAnInsertIsOneSpanLinkingEveryItemsTrace(t *testing.T) {
	db := open(t)
	makeTable(t, db, "traced")
	var committed settled
	es := receipted(events(5), &committed)
	for i := range es {
		es[i].Receipt = es[i].Receipt.WithTrace(context.WithValue(context.Background(), traceKey{}, "trace-"+strconv.Itoa(i)))
	}
	tr := &spanTracer{}
	w := clickhousex.NewWriter(db, "traced", eventColumns, eventRow)
	p := sluice.New(ctxT(t, 30*time.Second), sluice.Tracing(tr))
	clickhousex.Insert(p, "store", sluice.FromSlice(p, "events", es, sluice.Chunk(5)), w)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Batches != 1 || committed.acked.Load() != 5 {
		t.Fatalf("Stats %+v, %d acknowledged; want one insert of the 5", st, committed.acked.Load())
	}
	if len(tr.spans) != 1 {
		t.Fatalf("spans %+v; want one, the insert's", tr.spans)
	}
	c, links := tr.spans[0], tr.links[0]
	if c.Stage != "store" || c.Kind != "for-each-chunk" || c.Items != 5 || c.Parent != nil {
		t.Fatalf("span %+v; want stage store, kind for-each-chunk, 5 items, no parent", c)
	}
	if strings.Join(links, ",") != "trace-0,trace-1,trace-2,trace-3,trace-4" {
		t.Fatalf("links %q; want every item's trace", links)
	}
}
