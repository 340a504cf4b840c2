package dash

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// The /events stream's period: the default, and the range ?every= may ask
// for.
const (
	defaultEvery = 500 * time.Millisecond
	minEvery     = 100 * time.Millisecond
	maxEvery     = 10 * time.Second
	// writeStall ends a stream whose client has stopped reading.
	writeStall = 10 * time.Second
)

// serveEvents streams one View per period as Server-Sent Events. It runs in
// the goroutine the server gave the request and returns when the client
// goes away (the request's context ends), a write fails or stalls, or the
// board is closed.
func (b *Board) serveEvents(w http.ResponseWriter, r *http.Request) {
	every := defaultEvery
	if s := r.URL.Query().Get("every"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < minEvery || d > maxEvery {
			http.Error(w, fmt.Sprintf("dash: every must be a duration from %v to %v, got %q", minEvery, maxEvery, s),
				http.StatusBadRequest)
			return
		}
		every = d
	}
	b.streams.Add(1)
	defer b.streams.Add(-1)

	rc := http.NewResponseController(w)
	// The deadlines send sets must not outlive the stream: a server without
	// a WriteTimeout would keep the last one for the connection's next
	// request.
	defer rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // tell proxies not to hold messages back
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return // the headers are the whole answer: no stream to hold open
	}
	// A client whose stream ends (say, the next run of a program serving
	// this board) reconnects after a second.
	if _, err := fmt.Fprint(w, "retry: 1000\n\n"); err != nil {
		return
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		closed := b.isClosed()
		if err := b.send(w, rc); err != nil || closed {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-b.closed: // once more round the loop, to send the final state
		case <-tick.C:
		}
	}
}

func (b *Board) isClosed() bool {
	select {
	case <-b.closed:
		return true
	default:
		return false
	}
}

// send writes one message carrying the current View and flushes it.
func (b *Board) send(w http.ResponseWriter, rc *http.ResponseController) error {
	body, err := json.Marshal(b.View())
	if err != nil {
		return err
	}
	// Not every ResponseWriter supports deadlines (httptest's recorder
	// does not); where it does, a client that stops reading cannot hold
	// this goroutine for longer than writeStall.
	if err := rc.SetWriteDeadline(time.Now().Add(writeStall)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	if _, err := fmt.Fprintf(w, "data: %s\n\n", body); err != nil {
		return err
	}
	return rc.Flush()
}
