package prom

import (
	"bufio"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dash"
)

// The squares workload of seed 002, as cmd/sluice runs it: a generator
// cycles through a list of random numbers, 3 workers square them, a
// Reduce sums the squares.
const (
	squaresN       = 1 << 24
	squaresWorkers = 3
)

var squaresNums = func() []int {
	rng := rand.New(rand.NewPCG(2, 2))
	xs := make([]int, 1024)
	for i := range xs {
		xs[i] = rng.IntN(100)
	}
	return xs
}()

func squaresWant() int {
	sum := 0
	for i := range squaresN {
		v := squaresNums[i%len(squaresNums)]
		sum += v * v
	}
	return sum
}

// squares builds the pipeline; its sum is ready once Wait returns.
func squares() (*sluice.Pipeline, *sluice.Result[int]) {
	p := sluice.New(context.Background(), sluice.Named("squares"))
	src := sluice.From(p, "generate", func(ctx context.Context, out *sluice.Emitter[int]) error {
		j := 0
		for range squaresN {
			if !out.Send(squaresNums[j]) {
				return ctx.Err()
			}
			if j++; j == len(squaresNums) {
				j = 0
			}
		}
		return nil
	})
	sq := sluice.Map(p, "square", src, squaresWorkers, func(_ context.Context, v int) (int, error) { return v * v, nil })
	return p, sluice.Reduce(p, "sum", sq, 0, func(acc, v int) int { return acc + v })
}

// watchers is everything that observes a pipeline in production: a
// Prometheus collector behind /metrics, scraped every 100 ms, and the
// dash page's event stream, open.
type watchers struct {
	c      *Collector
	board  *dash.Board
	srv    *httptest.Server
	client *http.Client
}

func newWatchers() *watchers {
	w := &watchers{c: NewCollector(), board: dash.Handler()}
	reg := prometheus.NewRegistry()
	reg.MustRegister(w.c)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", w.board)
	w.srv = httptest.NewServer(mux)
	w.client = &http.Client{Transport: &http.Transport{}}
	return w
}

func (w *watchers) close() {
	w.board.Close()
	w.client.CloseIdleConnections()
	w.srv.Close()
}

// watch starts scraping /metrics every 100 ms and reading the page's event
// stream for p. The returned stop ends both, waits for their goroutines,
// and reports how many scrapes and events there were.
func (w *watchers) watch(p *sluice.Pipeline) (stop func() (scrapes, events int)) {
	w.c.Add(p)
	w.board.Add(p)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var scrapes, events int
	wg.Add(2)
	go func() { // owned by stop: it cancels ctx and waits
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			req, _ := http.NewRequestWithContext(ctx, "GET", w.srv.URL+"/metrics", nil)
			resp, err := w.client.Do(req)
			if err != nil {
				return // cancelled
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(body), `sluice_stage_items_total{direction="out",pipeline="squares"`) {
				scrapes++
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	go func() { // owned by stop, likewise
		defer wg.Done()
		req, _ := http.NewRequestWithContext(ctx, "GET", w.srv.URL+"/events", nil)
		resp, err := w.client.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				events++
			}
		}
	}()
	return func() (int, int) {
		cancel()
		wg.Wait()
		w.c.Remove(p)
		w.board.Remove(p)
		return scrapes, events
	}
}

// cost is what one run took: wall-clock time, and CPU time (user+sys) of
// the whole process — the pipeline's goroutines and, when watched, the
// scraper, the HTTP server and the event stream.
type cost struct{ wall, cpu time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSquaresWatched measures what watching costs the squares
// workload. Each iteration runs it twice, unwatched and watched, in
// alternating order, so that both runs of a pair see the same machine.
// It reports per-item wall and CPU time of each, and the medians over
// pairs of watched throughput as a share of unwatched ("watched-%", by
// wall time; "watched-cpu-%", by CPU time): 100 means free.
func BenchmarkSquaresWatched(b *testing.B) {
	want := squaresWant()
	w := newWatchers()
	defer w.close()
	var plain, watched cost
	var wallRatios, cpuRatios []float64
	var scrapes, events int
	run := func(observe bool) cost {
		p, sum := squares()
		start, cpu0 := time.Now(), cpuNow()
		var stop func() (int, int)
		if observe {
			stop = w.watch(p)
		}
		err := p.Wait()
		if observe {
			s, e := stop()
			scrapes, events = scrapes+s, events+e
		}
		c := cost{time.Since(start), cpuNow() - cpu0}
		if err != nil || sum.Value() != want {
			b.Fatalf("got sum %d, err %v; want %d", sum.Value(), err, want)
		}
		return c
	}
	for b.Loop() {
		var pc, wc cost
		if len(wallRatios)%2 == 0 {
			pc, wc = run(false), run(true)
		} else {
			wc, pc = run(true), run(false)
		}
		plain.wall, plain.cpu = plain.wall+pc.wall, plain.cpu+pc.cpu
		watched.wall, watched.cpu = watched.wall+wc.wall, watched.cpu+wc.cpu
		wallRatios = append(wallRatios, 100*pc.wall.Seconds()/wc.wall.Seconds())
		cpuRatios = append(cpuRatios, 100*pc.cpu.Seconds()/wc.cpu.Seconds())
	}
	items := float64(len(wallRatios)) * squaresN
	b.ReportMetric(float64(plain.wall.Nanoseconds())/items, "plain-ns/item")
	b.ReportMetric(float64(watched.wall.Nanoseconds())/items, "watched-ns/item")
	b.ReportMetric(float64(plain.cpu.Nanoseconds())/items, "plain-cpu-ns/item")
	b.ReportMetric(float64(watched.cpu.Nanoseconds())/items, "watched-cpu-ns/item")
	b.ReportMetric(median(wallRatios), "watched-%")
	b.ReportMetric(median(cpuRatios), "watched-cpu-%")
	b.ReportMetric(float64(scrapes)/watched.wall.Seconds(), "scrapes/s")
	b.ReportMetric(float64(events)/watched.wall.Seconds(), "events/s")
	b.ReportMetric(0, "ns/op") // an op is a pair of runs: the figures above say more
}

// median is the median of xs (the mean of the middle two for an even
// count).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}
