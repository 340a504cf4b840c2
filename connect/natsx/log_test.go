package natsx_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sluicehq/sluice"

	natsx "github.com/sluicehq/sluice/connect/natsx"
	"github.com/sluicehq/sluice/connect/natsx/natsembed"
)

// record is one log record as the recorder keeps it: every attribute,
// those given to With included, as text.
type record struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (r record) String() string { return fmt.Sprintf("%v %q %v", r.level, r.msg, r.attrs) }

// recorder is a slog.Handler that keeps every record at Debug and above;
// text, a second handler fed the same records, keeps them as a text
// handler writes them, where a secret would show however it was put in.
type recorder struct {
	mu   *sync.Mutex
	recs *[]record
	text *bytes.Buffer
	th   slog.Handler
	with []slog.Attr
}

func newRecorder() (*recorder, *slog.Logger) {
	buf := new(bytes.Buffer)
	r := &recorder{mu: new(sync.Mutex), recs: new([]record), text: buf,
		th: slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})}
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

func (r *recorder) WithGroup(string) slog.Handler { panic("natsx logs use no groups") }

func (r *recorder) records() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]record(nil), *r.recs...)
}

// find returns the records with message msg.
func (r *recorder) find(msg string) []record {
	var out []record
	for _, rec := range r.records() {
		if rec.msg == msg {
			out = append(out, rec)
		}
	}
	return out
}

// one returns the only record with message msg at level, failing the test
// unless there is exactly one, and checks that it has the attributes
// want.
func (r *recorder) one(t *testing.T, level slog.Level, msg string, want map[string]string) record {
	t.Helper()
	got := r.find(msg)
	if len(got) != 1 {
		t.Fatalf("%d records %q; want 1. All: %v", len(got), msg, r.records())
	}
	checkRecord(t, got[0], level, want)
	return got[0]
}

func checkRecord(t *testing.T, rec record, level slog.Level, want map[string]string) {
	t.Helper()
	if rec.level != level {
		t.Errorf("%v: level %v; want %v", rec, rec.level, level)
	}
	for k, v := range want {
		got, ok := rec.attrs[k]
		switch {
		case !ok:
			t.Errorf("%v: no attribute %q; want %q", rec, k, v)
		case v != "*" && got != v:
			t.Errorf("%v: %s=%q; want %q", rec, k, got, v)
		}
	}
}

// sum adds up the attribute key of records.
func sum(t *testing.T, recs []record, key string) int64 {
	t.Helper()
	var n int64
	for _, rec := range recs {
		v, err := strconv.ParseInt(rec.attrs[key], 10, 64)
		if err != nil {
			t.Fatalf("%v: %s is not a number: %v", rec, key, err)
		}
		n += v
	}
	return n
}

func TestSourceLogsItsConsumerAndEachReadWithCountsAndNothingPerMessage(t *testing.T) {
	js := serverWith(t, "IN", "OUT")
	const n = 2000
	publishN(t, js, "in.x", n)
	rec, log := newRecorder()
	ctx := ctxT(t, time.Minute)
	src := newSource(t, ctx, js, "IN", "copy", natsx.StopWhenCaughtUp(), natsx.IdleCheck(50*time.Millisecond),
		natsx.MaxInFlight(500), natsx.Logger(log))
	sink := newSink(t, ctx, js, natsx.ToStream("OUT"), natsx.Logger(log))
	if err := copyPipeline(ctx, src, sink, nil).Wait(); err != nil {
		t.Fatal(err)
	}
	rec.one(t, slog.LevelInfo, "consumer created", map[string]string{
		"stream": "IN", "consumer": "copy", "max_in_flight": "500", "ack_wait": "30s", "max_deliver": "-1", "server": "*"})
	rec.one(t, slog.LevelInfo, "read started", map[string]string{"stream": "IN", "consumer": "copy", "pipeline": "*", "stage": "read"})
	rec.one(t, slog.LevelInfo, "read ended", map[string]string{
		"stream": "IN", "consumer": "copy", "stage": "read", "received": itoa(n), "acked": itoa(n),
		"failed": "0", "redelivered": "0", "parked": "0", "handed_back": "0", "in_flight": "0", "elapsed": "*"})
	if all := rec.records(); len(all) != 3 {
		t.Fatalf("%d records for %d messages; want 3: %v", len(all), n, all)
	}
}

func TestSourceWithBindLogsTheConsumerBound(t *testing.T) {
	js := serverWith(t, "IN")
	newSource(t, ctxT(t, 5*time.Second), js, "IN", "made", natsx.Redeliver(4, 0))
	rec, log := newRecorder()
	newSource(t, ctxT(t, 5*time.Second), js, "IN", "made", natsx.Bind(), natsx.Logger(log))
	rec.one(t, slog.LevelInfo, "consumer bound", map[string]string{"stream": "IN", "consumer": "made", "max_deliver": "4"})
}

// A storm of dead letters — every message fails on its only delivery —
// is logged as a count, not a line per message: the first at once, the
// rest when the Read ends (the run is far shorter than LogInterval).
func TestDeadLetterStormIsLoggedAsABoundedCount(t *testing.T) {
	js := serverWith(t, "IN", "DEAD")
	const n = 2000
	publishN(t, js, "in.x", n)
	rec, log := newRecorder()
	ctx := ctxT(t, time.Minute)
	src := newSource(t, ctx, js, "IN", "fail", natsx.Redeliver(1, 0), natsx.DeadLetterTo("dead.in"),
		natsx.StopWhenCaughtUp(), natsx.IdleCheck(50*time.Millisecond), natsx.Logger(log))
	p := sluice.New(ctx)
	sluice.ForEach(p, "fail", natsx.Read(p, "read", src), 4, func(_ context.Context, m natsx.Msg) error {
		m.Fail(fmt.Errorf("bad input %s", m.Data()))
		return nil
	})
	start := time.Now()
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	dead := rec.find("messages parked")
	if max := 2 + int(took/sluice.LogInterval); len(dead) > max || len(dead) == 0 {
		t.Fatalf("%d lines for %d dead letters in %v; want 1 to %d: %v", len(dead), n, took, max, dead)
	}
	if got := sum(t, dead, "count"); got != n {
		t.Fatalf("lines count %d dead letters; want %d", got, n)
	}
	checkRecord(t, dead[0], slog.LevelWarn, map[string]string{"stream": "IN", "consumer": "fail", "stream_seq": "*", "deliveries": "1", "cause": "*"})
	if !strings.HasPrefix(dead[0].attrs["cause"], "bad input ") {
		t.Fatalf("%v: want the latest cause", dead[0])
	}
	rec.one(t, slog.LevelInfo, "read ended", map[string]string{"received": itoa(n), "failed": itoa(n), "parked": itoa(n)})
	if all := rec.records(); len(all) > 6 {
		t.Fatalf("%d records for %d dead letters: %v", len(all), n, all)
	}
}

// The server's give-up on a message, resolved by a Read, is logged: as
// a dead letter with its stream sequence and deliveries, or, without a
// dead-letter subject, as an error, with the run's failure.
func TestGiveUpsAreLoggedWithTheirStreamSequence(t *testing.T) {
	for _, dead := range []bool{true, false} {
		t.Run(fmt.Sprintf("dead-letter=%v", dead), func(t *testing.T) {
			streams := []string{"IN"}
			rec, log := newRecorder()
			opts := []natsx.SourceOption{natsx.Redeliver(2, 0), natsx.AckWait(100 * time.Millisecond),
				natsx.IdleCheck(10 * time.Millisecond), natsx.StopWhenCaughtUp(), natsx.Logger(log)}
			if dead {
				streams = append(streams, "DEAD")
				opts = append(opts, natsx.DeadLetterTo("dead.in"))
			}
			js := serverWith(t, streams...)
			publishN(t, js, "in.x", 20)
			src := newSource(t, ctxT(t, 5*time.Second), js, "IN", "hold", opts...)
			var held atomic.Int64
			err := holdSeven(t, src, &held, func() bool { return false })
			if dead {
				if err != nil {
					t.Fatal(err)
				}
				r := rec.one(t, slog.LevelWarn, "messages parked", map[string]string{
					"count": "1", "stream_seq": "8", "deliveries": "2", "cause": "*"})
				if !strings.Contains(r.attrs["cause"], "MaxDeliver") {
					t.Fatalf("%v: want the cause to name MaxDeliver", r)
				}
				rec.one(t, slog.LevelInfo, "read ended", map[string]string{"gave_up": "1", "parked": "1"})
				return
			}
			wantErr(t, err, nil, "stream sequence 8")
			rec.one(t, slog.LevelError, "messages given up", map[string]string{"count": "1", "stream_seq": "8", "deliveries": "2", "error": "*"})
			r := rec.one(t, slog.LevelError, "read ended", map[string]string{"gave_up": "1", "error": "*"})
			if !strings.Contains(r.attrs["error"], "stream sequence 8") {
				t.Fatalf("%v: want the run's error", r)
			}
		})
	}
}

// A sink whose writes all fail — every message rejected — logs a count
// per LogInterval, not a line per message or per write.
func TestSinkWriteFailureStormIsLoggedAsABoundedCount(t *testing.T) {
	js := serverWith(t, "OUT", "OTHER") // OUT rejects what OTHER holds
	rec, log := newRecorder()
	ctx := ctxT(t, time.Minute)
	sink, err := natsx.NewSink(ctx, js, natsx.ToStream("OUT"), natsx.Logger(log))
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	outs := make([]natsx.Out, n)
	for i := range outs {
		outs[i] = natsx.Out{Subject: "other.x", Data: []byte("x")}
	}
	p := sluice.New(ctx)
	natsx.Publish(p, "publish", sluice.FromSlice(p, "outs", outs), sink, sluice.SkipErrors())
	start := time.Now()
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	sink.Close() // writes what the tally holds
	fails := rec.find("writes failed")
	if max := 2 + int(took/sluice.LogInterval); len(fails) > max || len(fails) == 0 {
		t.Fatalf("%d lines for %d failed messages in %v; want 1 to %d: %v", len(fails), n, took, max, fails)
	}
	if got := sum(t, fails, "count"); got != n {
		t.Fatalf("lines count %d failed messages; want %d", got, n)
	}
	checkRecord(t, fails[0], slog.LevelWarn, map[string]string{"stream": "OUT", "subject": "other.x", "error": "*", "server": "*"})
	if !strings.Contains(fails[0].attrs["error"], "code=400") {
		t.Fatalf("%v: want the server's rejection as the error", fails[0])
	}
	if all := rec.records(); len(all) != len(fails) {
		t.Fatalf("records besides the failures: %v", all)
	}
}

// authServer starts a server with JetStream that admits user "sluice"
// with password, on port (0: any) with its store in dir.
func authServer(t *testing.T, dir string, port int, password string) *server.Server {
	t.Helper()
	if port == 0 {
		port = -1
	}
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: port, Username: "sluice", Password: password,
		JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true, NoSystemAccount: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		natsembed.Stop(s)
		t.Fatal("server not ready")
	}
	return s
}

// A copy pipeline across a server restart logs each outage's beginning
// and end, on the source's side and the sink's, and no line shows the
// password of the server's URL, percent-encoded or not.
func TestOutagesAreLoggedAndNoLineShowsThePassword(t *testing.T) {
	const password = "pa$s-s3cret/x"
	dir := t.TempDir()
	srv := authServer(t, dir, 0, password)
	t.Cleanup(func() { natsembed.Stop(srv) })
	port := natsembed.Port(srv)
	url := "nats://sluice:" + strings.ReplaceAll(strings.ReplaceAll(password, "$", "%24"), "/", "%2F") + "@127.0.0.1:" + itoa(port)
	nc, err := natsx.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	makeStream(t, js, "IN", "in.>")
	makeStream(t, js, "OUT", "out.>")
	const n = 3000
	publishN(t, js, "in.x", n)

	rec, log := newRecorder()
	ctx := ctxT(t, 2*time.Minute)
	src := newSource(t, ctx, js, "IN", "copy", natsx.StopWhenCaughtUp(), natsx.IdleCheck(50*time.Millisecond),
		natsx.AckWait(2*time.Second), natsx.Logger(log))
	sink := newSink(t, ctx, js, natsx.ToStream("OUT"), natsx.AckTimeout(time.Second), natsx.Logger(log))
	var copied atomic.Int64
	p := copyPipeline(ctx, src, sink, func(m natsx.Msg) (natsx.Out, error) {
		if copied.Add(1)%2 == 0 { // about 2 messages a millisecond
			time.Sleep(time.Millisecond)
		}
		return natsx.Out{Subject: "out.x", Data: m.Data(), ID: m.ID(), From: m.Receipt}, nil
	}, sluice.Retry(40, 50*time.Millisecond, time.Second))
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()

	eventually(t, 30*time.Second, "a quarter of the output stored", func() bool { return sink.Stats().Published >= n/4 })
	natsembed.Stop(srv)
	time.Sleep(300 * time.Millisecond) // several idle checks of the source without the server
	srv2 := authServer(t, dir, port, password)
	t.Cleanup(func() { natsembed.Stop(srv2) })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	sink.Close()

	begun, ended := rec.find("outage begun"), rec.find("outage ended")
	var srcBegun, sinkBegun, srcEnded, sinkEnded int
	for _, r := range begun {
		checkRecord(t, r, slog.LevelWarn, map[string]string{"error": "*", "server": "*"})
		if r.attrs["consumer"] == "copy" {
			srcBegun++
		} else {
			sinkBegun++
		}
	}
	for _, r := range ended {
		checkRecord(t, r, slog.LevelInfo, map[string]string{"outage": "*"})
		if r.attrs["consumer"] == "copy" {
			srcEnded++
		} else {
			sinkEnded++
		}
	}
	// The connection's loss and return is one outage; a request
	// unanswered while the restarted server readies JetStream may make
	// another.
	if srcBegun < 1 || sinkBegun < 1 || srcBegun > 3 || sinkBegun > 3 || srcEnded != srcBegun || sinkEnded != sinkBegun {
		t.Fatalf("source: %d outages begun, %d ended; sink: %d begun, %d ended; want 1 to 3 on each side, each ended. Begun: %v; ended: %v",
			srcBegun, srcEnded, sinkBegun, sinkEnded, begun, ended)
	}
	if r := begun[0]; r.attrs["error"] != "lost the connection to the server" {
		t.Fatalf("first outage: %v; want the lost connection as its error", r)
	}
	if all := rec.records(); len(all) > 12 {
		t.Fatalf("%d records for one outage: %v", len(all), all)
	}
	text := rec.text.String()
	for _, secret := range []string{"s3cret", "pa%24s", "pa$s"} {
		if strings.Contains(text, secret) {
			t.Fatalf("a line shows the password (%q):\n%s", secret, text)
		}
	}
	if !strings.Contains(text, "sluice:xxxxx@127.0.0.1") {
		t.Fatalf("no line names the server with its password hidden:\n%s", text)
	}
}

// A token in the server's URL, or given as an option, is hidden too.
func TestNoLineShowsAToken(t *testing.T) {
	const token = "tok-s3cret-42"
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, Authorization: token,
		JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true, NoSystemAccount: true})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(func() { natsembed.Stop(s) })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	addr := "127.0.0.1:" + itoa(natsembed.Port(s))
	for name, connect := range map[string]func() (*nats.Conn, error){
		"in the URL": func() (*nats.Conn, error) { return natsx.Connect("nats://" + token + "@" + addr) },
		"as Token":   func() (*nats.Conn, error) { return natsx.Connect("nats://"+addr, nats.Token(token)) },
	} {
		t.Run(name, func(t *testing.T) {
			nc, err := connect()
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			js, _ := jetstream.New(nc)
			stream := "T" + strconv.Itoa(len(name))
			makeStream(t, js, stream, strings.ToLower(stream)+".>")
			rec, log := newRecorder()
			newSource(t, ctxT(t, 5*time.Second), js, stream, "c", natsx.Logger(log))
			sink := newSink(t, ctxT(t, 5*time.Second), js, natsx.Logger(log))
			if err := sink.Write(ctxT(t, 5*time.Second), []natsx.Out{{Subject: "nowhere.x"}}); err == nil {
				t.Fatal("a write to a subject no stream holds succeeded")
			}
			sink.Close()
			if len(rec.find("writes failed")) != 1 || len(rec.find("consumer created")) != 1 {
				t.Fatalf("records: %v", rec.records())
			}
			if text := rec.text.String(); strings.Contains(text, "s3cret") {
				t.Fatalf("a line shows the token:\n%s", text)
			}
		})
	}
}
