// Package dash serves a live page that shows where a sluice pipeline is
// stuck: each pipeline drawn as a graph from its sources through its stages
// to its sinks, every edge with how full its queue is, every stage with its
// items per second, drops, failed items, retries, busy and waiting workers
// and latency, the bottleneck highlighted (see [BottleneckRule]), and the
// last five minutes of each stage's items per second and input queue fill
// as small charts, so that a bottleneck that moves shows where it was.
//
//	board := dash.Handler(p)
//	go http.ListenAndServe("localhost:8080", board)
//
// One [Board] serves any number of pipelines of one process. Its routes,
// relative to wherever it is mounted (it works behind [http.StripPrefix]):
//
//	/               the page (HTML, CSS and JavaScript embedded in the binary;
//	                it loads nothing from the network)
//	/events         a Server-Sent Events stream: one [View] as JSON per
//	                message, every 500 ms (?every=250ms to change it,
//	                100 ms to 10 s)
//	/snapshot.json  one [View] as JSON, for scripts
//
// The page can also list the last events of the program: the records of
// its log/slog log, kept by an [EventLog] that wraps the log's handler
// ([Events], [Board.ShowEvents]), so that what the log says is seen next
// to the stages it concerns.
//
// A Board starts no goroutine of its own. Each /events stream runs in the
// goroutine the HTTP server gave its request, and ends when the client goes
// away, when a write stalls for 10 s, or when [Board.Close] is called.
//
// Cost: a reading is one [sluice.Pipeline.Stats] call, taken at most every
// 100 ms per pipeline however many clients watch; the pipeline's own
// counters are updated per chunk whether or not anyone reads them. The
// history is kept by the board, from its readings: about 5 KB per stage,
// and about 3 KB per stage in each message once five minutes are kept.
// The board keeps it only while it is read; the seconds in between get
// the average rate of the interval and no queue fill (see [StageView]).
package dash

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

//go:embed assets
var assets embed.FS

// Board is the http.Handler that serves the page, the event stream and the
// JSON snapshot for a set of pipelines. Make one with [Handler]; the zero
// Board is not usable. Its methods are safe for concurrent use.
type Board struct {
	mux *http.ServeMux

	pipelines metrics.Pipelines // those shown, in order
	mu        sync.Mutex        // guards entries, nextID and events
	entries   map[*sluice.Pipeline]*entry
	nextID    int
	events    *EventLog // ShowEvents; nil: none

	closed    chan struct{}
	closeOnce sync.Once
	streams   atomic.Int64 // open /events streams
}

// entry is one pipeline on the board and its recent readings.
type entry struct {
	id   int
	p    *sluice.Pipeline
	hist []sluice.Snapshot // oldest first; see read
	past history           // the last minutes, one point per second
}

// Handler returns a Board showing the given pipelines, in that order. More
// can be added with [Board.Add] at any time. It panics if a pipeline is nil.
func Handler(pipelines ...*sluice.Pipeline) *Board {
	b := &Board{mux: http.NewServeMux(), closed: make(chan struct{}), entries: map[*sluice.Pipeline]*entry{}}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic("dash: embedded assets missing: " + err.Error())
	}
	files := http.FileServerFS(static)
	b.mux.HandleFunc("GET /{$}", b.servePage)
	b.mux.Handle("GET /app.js", files)
	b.mux.Handle("GET /style.css", files)
	b.mux.HandleFunc("GET /events", b.serveEvents)
	b.mux.HandleFunc("GET /snapshot.json", b.serveSnapshot)
	for _, p := range pipelines {
		b.Add(p)
	}
	return b
}

// Add shows p on the board, after the pipelines already there; adding a
// pipeline that is already shown does nothing. A pipeline stays on the
// board after it is done, showing its final counts, until [Board.Remove].
// Pipelines are told apart by name on the page, as in metrics, so Add
// panics if another pipeline with p's name is shown: give them different
// names with [sluice.Named], or remove the old one first. It panics if p
// is nil.
func (b *Board) Add(p *sluice.Pipeline) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.pipelines.Add(p); err != nil {
		panic("dash: " + err.Error())
	}
	if b.entries[p] == nil {
		b.entries[p] = &entry{id: b.nextID, p: p}
		b.nextID++
	}
}

// Remove takes p off the board; removing a pipeline that is not shown does
// nothing.
func (b *Board) Remove(p *sluice.Pipeline) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pipelines.Remove(p)
	delete(b.entries, p)
}

// Close ends every open /events stream after one last message, so that an
// [http.Server] can shut down: register it with
// [http.Server.RegisterOnShutdown]. Streams opened after Close get one
// message and end; the page and the snapshot are still served. Calling
// Close again does nothing.
func (b *Board) Close() { b.closeOnce.Do(func() { close(b.closed) }) }

// ServeHTTP serves the page, /events and /snapshot.json.
func (b *Board) ServeHTTP(w http.ResponseWriter, r *http.Request) { b.mux.ServeHTTP(w, r) }

// View takes a reading of every pipeline on the board (or reuses one
// under 100 ms old) and returns what the page and /snapshot.json show.
func (b *Board) View() View {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := View{Taken: time.Now(), Rule: BottleneckRule, Pipelines: make([]PipelineView, 0, len(b.entries))}
	for _, p := range b.pipelines.List() {
		e := b.entries[p]
		base, cur := e.read()
		pv := viewOf(base, cur, &e.past)
		pv.ID = e.id
		v.Pipelines = append(v.Pipelines, pv)
	}
	if b.events != nil {
		v.Events = b.events.Last()
	}
	return v
}

// Readings closer together than minReadingAge are not taken: the newest
// one is reused, so the cost of watching does not grow with the number of
// clients. Rates are computed over at least rateWindow.
const (
	minReadingAge = 100 * time.Millisecond
	rateWindow    = time.Second
)

// read takes a new reading if the newest is old enough, and returns the
// base for rates — the newest reading at least rateWindow older than the
// current one, or nil (the pipeline's start, when every counter was zero)
// if there is none yet — and the current reading.
//
// hist keeps that base and every reading after it, so it holds at most
// about rateWindow/minReadingAge + 1 readings.
func (e *entry) read() (*sluice.Snapshot, sluice.Snapshot) {
	if n := len(e.hist); n == 0 || time.Since(e.hist[n-1].Taken) >= minReadingAge {
		cur := e.p.Stats()
		e.hist = append(e.hist, cur)
		e.past.add(cur)
	}
	var base *sluice.Snapshot
	e.hist, base = prune(e.hist)
	return base, e.hist[len(e.hist)-1]
}

// prune drops the readings of hist (oldest first, not empty) that are older
// than the base for rates, and returns what is left and that base: the
// newest reading at least rateWindow older than the last, or nil if none is.
func prune(hist []sluice.Snapshot) ([]sluice.Snapshot, *sluice.Snapshot) {
	cur := hist[len(hist)-1]
	for len(hist) >= 2 && cur.Elapsed-hist[1].Elapsed >= rateWindow {
		hist = hist[1:]
	}
	if cur.Elapsed-hist[0].Elapsed >= rateWindow {
		return hist, &hist[0]
	}
	return hist, nil
}

func (b *Board) servePage(w http.ResponseWriter, r *http.Request) {
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// The page loads only its own assets and talks only to this handler.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
	h.Set("Cache-Control", "no-cache")
	w.Write(page)
}

func (b *Board) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	body, err := json.MarshalIndent(b.View(), "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(body, '\n'))
}
