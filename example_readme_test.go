package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice"
)

// event is what the README's pipelines decode and store.
type event struct {
	Seq    int
	Symbol string
	Price  float64
}

// memDB stands in for a database whose Insert takes a batch.
type memDB struct {
	mu      sync.Mutex
	rows    []event
	batches []int // the size of each Insert
}

func (db *memDB) Insert(_ context.Context, b []event) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.rows = append(db.rows, b...)
	db.batches = append(db.batches, len(b))
	return nil
}

// The README's first pipeline ("A pipeline in 15 lines"): decode in 4
// workers, enrich in 4 workers keeping their input's order, collect
// batches of up to 500 (or what 50 ms gathered), write each batch with one
// Insert call in 2 workers, then read every stage's counters.
func Example_pipeline() {
	ctx := context.Background()
	events := make([]string, 1000)
	for i := range events {
		events[i] = fmt.Sprintf("%d,ACME,%d.5", i, i%7)
	}
	decode := func(_ context.Context, line string) (event, error) {
		f := strings.Split(line, ",")
		seq, err := strconv.Atoi(f[0])
		if err != nil {
			return event{}, err
		}
		price, err := strconv.ParseFloat(f[2], 64)
		return event{Seq: seq, Symbol: f[1], Price: price}, err
	}
	enrich := func(_ context.Context, e event) (event, error) {
		e.Symbol = "NYSE:" + e.Symbol
		return e, nil
	}
	db := &memDB{}

	p := sluice.New(ctx)
	src := sluice.FromSlice(p, "events", events)
	dec := sluice.Map(p, "decode", src, 4, decode)        // 4 workers, unordered
	ord := sluice.OrderedMap(p, "enrich", dec, 4, enrich) // 4 workers, input order kept
	bat := sluice.Batch(p, "collect", ord, 500, 50*time.Millisecond)
	sluice.ForEach(p, "write", bat, 2, func(ctx context.Context, b []event) error {
		return db.Insert(ctx, b)
	})
	if err := p.Wait(); err != nil { // first error or panic, after every goroutine has exited
		fmt.Println(err)
		return
	}
	for _, s := range p.Stats().Stages { // live or after the fact
		// The README prints s.In, s.Out and s.Busy too; here they would
		// make the output vary: Busy is a duration, and collect makes 2
		// batches unless 50 ms pass before 500 items come.
		fmt.Println(s.Name, s.Kind, s.Workers, s.Dropped, s.InDepth)
	}
	seqs := make([]int, len(db.rows))
	for i, r := range db.rows {
		seqs[i] = r.Seq
	}
	slices.Sort(seqs)
	fmt.Println(len(db.rows), "rows stored, each once:", slices.Equal(seqs, ints(1000)),
		"enriched:", db.rows[0].Symbol,
		"batches of ≤ 500:", slices.Max(db.batches) <= 500)
	// Output:
	// events source 1 0 0
	// decode map 4 0 0
	// enrich ordered-map 4 0 0
	// collect batch 1 0 0
	// write for-each 2 0 0
	// 1000 rows stored, each once: true enriched: NYSE:ACME batches of ≤ 500: true
}

// The first pipeline of docs/failures-and-drains.md, with a feed that a
// drain ends (the guide's own block runs in the docs module's test): a
// line that does not parse is dead-lettered and quarantined, a store
// that fails once is retried, one that fails for good (Permanent) is
// skipped and counted, and a drain (SIGTERM in a real program) lets
// everything taken finish: Wait returns nil.
func Example_failures() {
	ctx := context.Background()
	sigterm, stop := context.WithCancel(ctx) // signal.NotifyContext(ctx, syscall.SIGTERM) in a program
	in := make(chan string)                  // a feed that never closes
	parse := func(_ context.Context, line string) (int, error) { return strconv.Atoi(line) }
	var mu sync.Mutex
	var stored []int
	var quarantined []string
	tried := map[int]bool{}
	store := func(_ context.Context, v int) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case v == 13:
			return sluice.Permanent(errors.New("unlucky")) // not retried
		case v%2 == 0 && !tried[v]:
			tried[v] = true
			return errors.New("busy, try again") // retried
		}
		stored = append(stored, v)
		return nil
	}
	quarantine := func(_ context.Context, item string, err error) error {
		quarantined = append(quarantined, fmt.Sprintf("%q: %v", item, err))
		return nil
	}

	p := sluice.New(ctx, sluice.DrainGrace(5*time.Second)) // retries end 5s into a drain (the default)
	p.DrainOn(sigterm)                                     // SIGTERM: take nothing new, finish what is inside
	var bad sluice.Stream[sluice.Failed[string]]
	lines := sluice.FromChan(p, "lines", in)
	recs := sluice.Map(p, "parse", lines, 4, parse,
		sluice.DeadLetter(&bad)) // a bad line goes to bad, not to Wait
	sluice.ForEach(p, "store", recs, 2, store,
		sluice.Retry(5, 10*time.Millisecond, time.Second), // backoff with full jitter
		sluice.Timeout(2*time.Second), sluice.SkipErrors())
	sluice.ForEach(p, "quarantine", bad, 1, func(ctx context.Context, f sluice.Failed[string]) error {
		return quarantine(ctx, f.Item, f.Err) // f.Stage, f.Attempts too
	})

	for _, line := range []string{"1", "2", "x", "3", "4", "13", "5y"} {
		in <- line // unbuffered: once sent, the line is taken
	}
	stop()
	err := p.Wait() // nil after a drain that finished

	slices.Sort(stored)
	slices.Sort(quarantined)
	fmt.Println("stored:", stored, "error:", err)
	fmt.Println("quarantined:", quarantined)
	for _, s := range p.Stats().Stages {
		if s.Name == "parse" || s.Name == "store" {
			fmt.Printf("%s: failed %d, retries %d\n", s.Name, s.Failed, s.Retries)
		}
	}
	// Output:
	// stored: [1 2 3 4] error: <nil>
	// quarantined: ["5y": strconv.Atoi: parsing "5y": invalid syntax "x": strconv.Atoi: parsing "x": invalid syntax]
	// parse: failed 2, retries 0
	// store: failed 1, retries 2
}
