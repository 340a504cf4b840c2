package lab

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
)

// Seed 004's market-event pipeline, in process: decode (a pool of 4) →
// normalise (one goroutine) → collect into batches (500 events or 50 ms) →
// enrich from reference data (a batch lookup, a pool of 2) → sink. Written
// once with plain channels in the shapes of the seed's snippets (its worker
// pool, textbook stage, collect and batchEnrich), once with sluice. The
// source either sends as fast as it can (throughput) or at a fixed rate
// (latency at a realistic load). Every event is stamped when the source
// emits it; the sink records its age in a histogram and checks that every
// event arrives once with the enrichment a serial run computes.

const (
	pipeDecoders  = 4
	pipeEnrichers = 2
	pipeBatch     = 500
	pipeMaxWait   = 50 * time.Millisecond
	pipeRate      = 100_000 // events/s of the paced source
	pipeSymbols   = 64
)

type rawEvent struct {
	id  int
	at  int64 // ns on pipeClock when the source emitted it
	msg []byte
}

type marketEvent struct {
	id       int
	at       int64
	sym      int32
	price    int64
	qty      int64
	notional int64
}

type enrichedEvent struct {
	marketEvent
	sector int32
	weight int64
}

type reference struct {
	sector int32
	factor int64
}

// pipeWorld is the fixed input and reference data of one size.
type pipeWorld struct {
	msgs    [][]byte
	symbols map[string]int32
	refs    map[int32]reference
	want    int64 // checksum of a serial run
}

var pipeClockStart = time.Now()

func pipeClock() int64 { return int64(time.Since(pipeClockStart)) }

func newPipeWorld(n int) *pipeWorld {
	rng := rand.New(rand.NewPCG(4, 4))
	w := &pipeWorld{symbols: map[string]int32{}, refs: map[int32]reference{}}
	names := make([]string, pipeSymbols)
	for i := range names {
		names[i] = fmt.Sprintf("SYM%02d", i)
		w.symbols[names[i]] = int32(i)
		w.refs[int32(i)] = reference{sector: int32(rng.IntN(11)), factor: 1 + rng.Int64N(999)}
	}
	w.msgs = make([][]byte, n)
	for i := range w.msgs {
		w.msgs[i] = fmt.Appendf(nil, "%s,%d,%d", names[rng.IntN(pipeSymbols)], 1000+rng.IntN(100000), 1+rng.IntN(500))
	}
	for i, m := range w.msgs {
		e, err := w.decode(rawEvent{id: i, msg: m})
		if err != nil {
			panic(err) // the generator above makes only good messages
		}
		for _, x := range w.enrich([]marketEvent{normalise(e)}) {
			w.want += x.checksum()
		}
	}
	return w
}

func (x enrichedEvent) checksum() int64 {
	return x.weight*31 + int64(x.sector)*7 + int64(x.id)
}

// decode parses "SYMBOL,price,qty".
func (w *pipeWorld) decode(r rawEvent) (marketEvent, error) {
	var f [3][]byte
	k, start := 0, 0
	for i, b := range r.msg {
		if b == ',' {
			if k == 2 {
				return marketEvent{}, fmt.Errorf("event %d: too many fields", r.id)
			}
			f[k], k, start = r.msg[start:i], k+1, i+1
		}
	}
	if k != 2 {
		return marketEvent{}, fmt.Errorf("event %d: %d fields, want 3", r.id, k+1)
	}
	f[2] = r.msg[start:]
	sym, ok := w.symbols[string(f[0])]
	if !ok {
		return marketEvent{}, fmt.Errorf("event %d: unknown symbol %q", r.id, f[0])
	}
	price, err1 := parseDigits(f[1])
	qty, err2 := parseDigits(f[2])
	if err1 != nil || err2 != nil {
		return marketEvent{}, fmt.Errorf("event %d: bad number in %q", r.id, r.msg)
	}
	return marketEvent{id: r.id, at: r.at, sym: sym, price: price, qty: qty}, nil
}

func parseDigits(b []byte) (int64, error) {
	if len(b) == 0 || len(b) > 18 {
		return 0, strconv.ErrSyntax
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, strconv.ErrSyntax
		}
		v = v*10 + int64(c-'0')
	}
	return v, nil
}

// normalise rounds the price to a tick of 5 and computes the notional.
func normalise(e marketEvent) marketEvent {
	e.price -= e.price % 5
	e.notional = e.price * e.qty
	return e
}

// enrich is the batch lookup: one pass over the reference data for the
// whole batch.
func (w *pipeWorld) enrich(batch []marketEvent) []enrichedEvent {
	out := make([]enrichedEvent, len(batch))
	for i, e := range batch {
		ref := w.refs[e.sym]
		out[i] = enrichedEvent{marketEvent: e, sector: ref.sector, weight: e.notional * ref.factor / 1000}
	}
	return out
}

// pipeSink checks and times what reaches the end of the pipeline.
type pipeSink struct {
	seen  []uint64 // bit per event id
	count int
	sum   int64
	dup   int
	lat   *latencies
}

func newPipeSink(n int) *pipeSink {
	return &pipeSink{seen: make([]uint64, (n+63)/64), lat: newLatencies()}
}

func (s *pipeSink) take(batch []enrichedEvent) {
	now := pipeClock()
	for _, x := range batch {
		word, bit := x.id/64, uint64(1)<<(x.id%64)
		if x.id < 0 || word >= len(s.seen) || s.seen[word]&bit != 0 {
			s.dup++
			continue
		}
		s.seen[word] |= bit
		s.count++
		s.sum += x.checksum()
		s.lat.Add(time.Duration(max(now-x.at, 0)))
	}
}

func (s *pipeSink) check(w *pipeWorld, m Metrics) error {
	n := len(w.msgs)
	switch {
	case s.dup > 0:
		return fmt.Errorf("%d events duplicated or unknown", s.dup)
	case s.count != n:
		return fmt.Errorf("%d of %d events arrived (lost)", s.count, n)
	case s.sum != w.want:
		return fmt.Errorf("checksum %d, want %d (wrong enrichment)", s.sum, w.want)
	}
	m["p50_ms"] = float64(s.lat.Quantile(0.50)) / 1e6
	m["p99_ms"] = float64(s.lat.Quantile(0.99)) / 1e6
	return nil
}

// source emits the world's events, stamped, either all at once or at
// pipeRate; flush hands on what was emitted before the source sleeps.
func (w *pipeWorld) source(paced bool, emit func(rawEvent) bool, flush func() bool) {
	n := len(w.msgs)
	if !paced {
		for i, m := range w.msgs {
			if !emit(rawEvent{id: i, at: pipeClock(), msg: m}) {
				return
			}
		}
		return
	}
	start := time.Now()
	for sent := 0; sent < n; {
		due := min(int(time.Since(start).Seconds()*pipeRate)+1, n)
		for ; sent < due; sent++ {
			if !emit(rawEvent{id: sent, at: pipeClock(), msg: w.msgs[sent]}) {
				return
			}
		}
		if !flush() {
			return
		}
		if wait := time.Duration(float64(sent)/pipeRate*1e9) - time.Since(start); wait > 0 {
			time.Sleep(wait)
		}
	}
}

// pipelinePlain is the pipeline with plain channels, in the seed's shapes.
func pipelinePlain(w *pipeWorld, paced bool, m Metrics) error {
	raw := make(chan rawEvent, pipeDecoders*16)
	go func() {
		defer close(raw)
		w.source(paced, func(r rawEvent) bool { raw <- r; return true }, func() bool { return true })
	}()

	// Decode: the seed's worker pool (parallelEnrich), output buffered
	// workers*16. A bad message is counted and dropped, as a pool with no
	// error path must.
	decoded := make(chan marketEvent, pipeDecoders*16)
	var bad sync.Map
	var wg sync.WaitGroup
	for range pipeDecoders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range raw {
				e, err := w.decode(r)
				if err != nil {
					bad.Store(r.id, err)
					continue
				}
				decoded <- e
			}
		}()
	}
	go func() {
		wg.Wait()
		close(decoded)
	}()

	// Normalise: the seed's textbook one-goroutine stage, unbuffered.
	normalised := make(chan marketEvent)
	go func() {
		for e := range decoded {
			normalised <- normalise(e)
		}
		close(normalised)
	}()

	batches := collect(normalised, pipeBatch, pipeMaxWait)

	// Enrich: the seed's batchEnrich, run by a pool of two.
	enriched := make(chan []enrichedEvent, 4)
	var ewg sync.WaitGroup
	for range pipeEnrichers {
		ewg.Add(1)
		go func() {
			defer ewg.Done()
			for b := range batches {
				enriched <- w.enrich(b)
			}
		}()
	}
	go func() {
		ewg.Wait()
		close(enriched)
	}()

	sink := newPipeSink(len(w.msgs))
	for b := range enriched {
		sink.take(b)
	}
	var err error
	bad.Range(func(_, v any) bool { err = v.(error); return false })
	if err != nil {
		return err
	}
	return sink.check(w, m)
}

// collect is the seed's size-and-time batcher, as the seed wrote it.
func collect(input <-chan marketEvent, batchSize int, maxWait time.Duration) <-chan []marketEvent {
	out := make(chan []marketEvent, 4)
	go func() {
		defer close(out)
		batch := make([]marketEvent, 0, batchSize)
		timer := time.NewTimer(maxWait)
		defer timer.Stop()

		flush := func() {
			if len(batch) > 0 {
				out <- batch
				batch = make([]marketEvent, 0, batchSize)
			}
		}
		for {
			select {
			case e, ok := <-input:
				if !ok {
					flush()
					return
				}
				batch = append(batch, e)
				if len(batch) >= batchSize {
					flush()
					if !timer.Stop() {
						<-timer.C
					}
					timer.Reset(maxWait)
				}
			case <-timer.C:
				flush()
				timer.Reset(maxWait)
			}
		}
	}()
	return out
}

// pipelineSluice is the same pipeline with sluice stages.
func pipelineSluice(w *pipeWorld, paced bool, m Metrics) error {
	p := sluice.New(context.Background(), sluice.Named("market-events"))
	src := sluice.From(p, "source", func(ctx context.Context, out *sluice.Emitter[rawEvent]) error {
		w.source(paced, out.Send, out.Flush)
		return ctx.Err()
	})
	dec := sluice.Map(p, "decode", src, pipeDecoders, func(_ context.Context, r rawEvent) (marketEvent, error) {
		return w.decode(r)
	})
	norm := sluice.Map(p, "normalise", dec, 1, func(_ context.Context, e marketEvent) (marketEvent, error) {
		return normalise(e), nil
	})
	bat := sluice.Batch(p, "collect", norm, pipeBatch, pipeMaxWait)
	enr := sluice.Map(p, "enrich", bat, pipeEnrichers, func(_ context.Context, b []marketEvent) ([]enrichedEvent, error) {
		return w.enrich(b), nil
	})
	sink := newPipeSink(len(w.msgs))
	sluice.ForEach(p, "sink", enr, 1, func(_ context.Context, b []enrichedEvent) error {
		sink.take(b)
		return nil
	})
	if err := p.Wait(); err != nil {
		return err
	}
	return sink.check(w, m)
}

func pipelineExperiment() *Experiment {
	return &Experiment{
		Name: "pipeline", Seed: "004", Unit: "event",
		Title: fmt.Sprintf("market events: decode (%d) → normalise → batch (%d, %v) → enrich (%d) → sink",
			pipeDecoders, pipeBatch, pipeMaxWait, pipeEnrichers),
		Columns: []Column{
			{Key: "p50_ms", Header: "p50 ms", Format: "%.2f"},
			{Key: "p99_ms", Header: "p99 ms", Format: "%.2f"},
		},
		Charts: []Column{{Key: "p99_ms", Header: "p99 ms", Format: "%.2f"}},
		Cases: func(c *Config) []Case {
			variants := []struct {
				name     string
				baseline bool
				run      func(*pipeWorld, bool, Metrics) error
			}{
				{"plain channels (seed)", true, pipelinePlain},
				{"sluice", false, pipelineSluice},
			}
			var cases []Case
			for _, paced := range []bool{false, true} {
				sizes := c.sizes(pick(c.Mode, []int{500_000}, []int{100_000}, []int{3000}))
				if paced {
					sizes = c.sizes(pick(c.Mode, []int{100_000}, []int{20_000}, []int{1000}))
				}
				for _, n := range sizes {
					group := fmt.Sprintf("as fast as possible, %s events", count(n))
					note := ""
					if paced {
						group = fmt.Sprintf("paced at %s events/s, %s events", count(pipeRate), count(n))
						note = "throughput is set by the pacing: compare latency"
					}
					var world *pipeWorld
					for _, v := range variants {
						cases = append(cases, Case{
							Group: group, Variant: v.name, Baseline: v.baseline, Items: n, Note: note, OneRound: true,
							Setup: func() (*Instance, error) {
								if world == nil {
									world = newPipeWorld(n)
								}
								return &Instance{Round: func(m Metrics) error { return v.run(world, paced, m) }}, nil
							},
						})
					}
				}
			}
			return cases
		},
	}
}
