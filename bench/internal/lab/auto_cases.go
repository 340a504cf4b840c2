package lab

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
)

// The auto experiment's cases, each a kind of work a Map stage does:
//
//   - cpu: hashing 4 KiB (SHA-256) per item;
//   - io: a call to a local HTTP server (127.0.0.1) that answers after 2 ms;
//   - saturating: the same server serving 16 calls at once and queueing the
//     rest, so that a call's latency rises past 16 in flight;
//   - drop: the same, serving 32 at once until half the run, then 8;
//   - refusing: the server serving 16 at once and answering 503 at once
//     past that, the stage retrying (Retry(1000, 1 ms, 20 ms));
//   - start-4x: the server serving 8 at once, queueing the rest, with Auto
//     starting at 32;
//   - throttle: calls answered after 20 ms under a Throttle of 100 calls a
//     second (about 2.1 workers' worth), with Auto starting at 16;
//   - refusing-32, refusing-32-from-4: the server serving 32 calls at once,
//     each answered after 5–50 ms, and answering 503 at once past that, the
//     stage retrying as the docs' example does (Retry(5, 10 ms, 1 s)), with
//     Auto starting at 32 and at 4: a fixed 32 finishes every run, and a
//     probe of Auto's must cost no item its five attempts;
//   - refusing-16-slow: the same server serving 16 at once, the stage
//     retrying Retry(1000, 1 ms, 20 ms).

const autoBase = 2 * time.Millisecond

type autoCase struct {
	name, title string
	start       int // the count Auto starts with
	// fixedMax, if set, is the largest fixed count that can finish: past
	// it, the dependency refuses so many calls that an item spends its
	// attempts, and the run fails (larger counts get no row).
	fixedMax int
	work     func(srv *depServer) (call func(context.Context, int) error, midway func())
	opts     func() []sluice.StageOption // for every row, fixed or Auto
}

func autoCases() []autoCase {
	return []autoCase{
		{name: "cpu", title: "CPU-bound: SHA-256 of 4 KiB", work: func(*depServer) (func(context.Context, int) error, func()) {
			buf := make([]byte, 4<<10)
			var sink atomic.Uint64
			return func(_ context.Context, v int) error {
				var b [4 << 10]byte
				copy(b[:], buf)
				b[0] = byte(v)
				s := sha256.Sum256(b[:])
				sink.Add(uint64(s[0]))
				return nil
			}, nil
		}},
		{name: "io", title: "IO-bound: an HTTP call answered after 2 ms", work: func(s *depServer) (func(context.Context, int) error, func()) {
			s.set(0, false, autoBase)
			return s.call, nil
		}},
		{name: "saturating", title: "a dependency serving 16 calls at once, queueing the rest", work: func(s *depServer) (func(context.Context, int) error, func()) {
			s.set(16, false, autoBase)
			return s.call, nil
		}},
		{name: "drop", title: "the dependency serving 32 at once, then 8 from half the run", work: func(s *depServer) (func(context.Context, int) error, func()) {
			s.set(32, false, autoBase)
			return s.call, func() { s.set(8, false, autoBase) }
		}},
		{name: "refusing", title: "a dependency serving 16 at once, 503 at once past that, with Retry", work: func(s *depServer) (func(context.Context, int) error, func()) {
			s.set(16, true, autoBase)
			return s.call, nil
		}, opts: func() []sluice.StageOption {
			return []sluice.StageOption{sluice.Retry(1000, time.Millisecond, 20*time.Millisecond)}
		}},
		{name: "start-4x", title: "a dependency serving 8 at once, queueing the rest; Auto from 32", start: 32, work: func(s *depServer) (func(context.Context, int) error, func()) {
			s.set(8, false, autoBase)
			return s.call, nil
		}},
		{name: "refusing-32", title: "a dependency serving 32 at once (5–50 ms), 503 past that, Retry(5, 10 ms, 1 s); Auto from 32", start: 32,
			fixedMax: 32, work: refusingSlow(32), opts: retryDocs},
		{name: "refusing-32-from-4", title: "the same, Auto from 4", start: 4, fixedMax: 32, work: refusingSlow(32), opts: retryDocs},
		{name: "refusing-16-slow", title: "a dependency serving 16 at once (5–50 ms), 503 past that, Retry(1000, 1 ms, 20 ms)",
			work: refusingSlow(16), opts: func() []sluice.StageOption {
				return []sluice.StageOption{sluice.Retry(1000, time.Millisecond, 20*time.Millisecond)}
			}},
		{name: "throttle", title: "calls of 20 ms under a Throttle of 100/s; Auto from 16", start: 16, work: func(s *depServer) (func(context.Context, int) error, func()) {
			s.set(0, false, 20*time.Millisecond)
			return s.call, nil
		}, opts: func() []sluice.StageOption {
			return []sluice.StageOption{sluice.Throttle(newLimiter(100))}
		}},
	}
}

// refusingSlow is the server serving capacity calls at once, each
// answered after 5–50 ms, and 503 at once past that.
func refusingSlow(capacity int) func(s *depServer) (func(context.Context, int) error, func()) {
	return func(s *depServer) (func(context.Context, int) error, func()) {
		s.set(capacity, true, 5*time.Millisecond)
		s.mu.Lock()
		s.spread = 45 * time.Millisecond
		s.mu.Unlock()
		return s.call, nil
	}
}

// retryDocs is the Retry of the docs' example.
func retryDocs() []sluice.StageOption {
	return []sluice.StageOption{sluice.Retry(5, 10*time.Millisecond, time.Second)}
}

// limiter lets one call through every 1/rate seconds, as a token bucket
// with a burst of one does.
type limiter struct {
	mu   sync.Mutex
	gap  time.Duration
	next time.Time
}

func newLimiter(rate float64) *limiter {
	return &limiter{gap: time.Duration(float64(time.Second) / rate)}
}

func (l *limiter) Wait(ctx context.Context) error {
	l.mu.Lock()
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	d := l.next.Sub(now)
	l.next = l.next.Add(l.gap)
	l.mu.Unlock()
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// depServer is the dependency: an HTTP server on 127.0.0.1 that answers
// each call after delay, serving at most capacity calls at once (0: any
// number) and queueing the rest in arrival order, or, refusing, answering
// them 503 at once.
type depServer struct {
	srv    *http.Server
	ln     net.Listener
	url    string
	client *http.Client

	mu       sync.Mutex
	cond     *sync.Cond
	capacity int
	refuse   bool
	delay    time.Duration
	spread   time.Duration // each call's delay is delay plus a random time below spread
	inUse    int
}

func newDepServer() (*depServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &depServer{ln: ln, url: "http://" + ln.Addr().String() + "/", delay: autoBase}
	s.cond = sync.NewCond(&s.mu)
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	s.client = &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute}}
	go s.srv.Serve(ln) // ends when close shuts the server down
	return s, nil
}

// set makes the server serve capacity calls at once (0: any number),
// refusing the rest or queueing them, each answered after delay.
func (s *depServer) set(capacity int, refuse bool, delay time.Duration) {
	s.mu.Lock()
	s.capacity, s.refuse, s.delay, s.spread = capacity, refuse, delay, 0
	s.mu.Unlock()
	s.cond.Broadcast()
}

func (s *depServer) serve(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	if s.refuse && s.capacity > 0 && s.inUse >= s.capacity {
		s.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	for s.capacity > 0 && s.inUse >= s.capacity {
		s.cond.Wait()
	}
	s.inUse++
	delay := s.delay
	if s.spread > 0 {
		delay += rand.N(s.spread)
	}
	s.mu.Unlock()
	time.Sleep(delay)
	s.mu.Lock()
	s.inUse--
	s.mu.Unlock()
	s.cond.Signal()
	io.WriteString(w, "ok")
}

// errUnavailable is a 503 from the dependency.
var errUnavailable = errors.New("dependency: 503 Service Unavailable")

func (s *depServer) call(ctx context.Context, _ int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return err
	case resp.StatusCode == http.StatusServiceUnavailable:
		return errUnavailable
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("dependency: %s", resp.Status)
	}
	return nil
}

func (s *depServer) close() {
	s.srv.Close()
	s.client.CloseIdleConnections()
}
