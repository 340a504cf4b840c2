package sluice_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"iter"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice"
)

// The README's "when a pipeline helps" case: a CSV-like job over 2M lines
// read with a bufio.Scanner, done three ways — a plain loop, a pipeline
// (FromSeq → Map with a worker per core → Reduce) and goroutines joined by
// channels — for two jobs per line: "match" (is the symbol ACME? a few ns)
// and "parse" (split four fields, parse three numbers: about 100 ns).
// BenchmarkCheapLines measures them; docs/performance.md gives the figures
// and the command.

// csvLines returns n lines "id,symbol,price,qty" as one file's bytes.
func csvLines(n int) []byte {
	var b bytes.Buffer
	syms := []string{"ACME", "INIT", "GLOB", "UMBR"}
	for i := range n {
		fmt.Fprintf(&b, "%d,%s,%d.%02d,%d\n", i, syms[i%len(syms)], 10+i%90, i%100, 1+i%7)
	}
	return b.Bytes()
}

// lineCents parses "id,symbol,price,qty" and returns price × qty in cents.
func lineCents(line string) (int64, error) {
	_, rest, _ := strings.Cut(line, ",") // id
	_, rest, _ = strings.Cut(rest, ",")  // symbol
	price, qty, ok := strings.Cut(rest, ",")
	if !ok {
		return 0, fmt.Errorf("want 4 fields: %q", line)
	}
	whole, frac, _ := strings.Cut(price, ".")
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, err
	}
	q, err := strconv.ParseInt(qty, 10, 64)
	if err != nil {
		return 0, err
	}
	return (w*100 + f) * q, nil
}

// lines yields the lines of data, as a bufio.Scanner over a file would.
func lines(data []byte) iter.Seq[string] {
	return func(yield func(string) bool) {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if !yield(sc.Text()) {
				return
			}
		}
	}
}

// lineACME is the cheapest job: 1 if the line's symbol is ACME.
func lineACME(line string) (int64, error) {
	_, rest, _ := strings.Cut(line, ",")
	if strings.HasPrefix(rest, "ACME,") {
		return 1, nil
	}
	return 0, nil
}

func totalLoop(data []byte, work func(string) (int64, error)) (int64, error) {
	var total int64
	for line := range lines(data) {
		c, err := work(line)
		if err != nil {
			return 0, err
		}
		total += c
	}
	return total, nil
}

func totalPipeline(ctx context.Context, data []byte, workers int, work func(string) (int64, error)) (int64, error) {
	p := sluice.New(ctx)
	src := sluice.FromSeq(p, "lines", lines(data))
	cents := sluice.Map(p, "parse", src, workers, func(_ context.Context, line string) (int64, error) {
		return work(line)
	})
	total := sluice.Reduce(p, "total", cents, 0, func(a, c int64) int64 { return a + c })
	if err := p.Wait(); err != nil {
		return 0, err
	}
	return total.Value(), nil
}

// totalChannels is the hand-written version most programs start with: a
// reader goroutine, workers joined by channels, a WaitGroup, the first
// error kept.
func totalChannels(data []byte, workers int, work func(string) (int64, error)) (int64, error) {
	in := make(chan string, 1024)
	out := make(chan int64, 1024)
	done := make(chan struct{})
	var once sync.Once
	var firstErr error
	go func() {
		defer close(in)
		for line := range lines(data) {
			select {
			case in <- line:
			case <-done:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for line := range in {
				c, err := work(line)
				if err != nil {
					once.Do(func() { firstErr = err; close(done) })
					continue
				}
				out <- c
			}
		})
	}
	go func() { wg.Wait(); close(out) }()
	var total int64
	for c := range out {
		total += c
	}
	return total, firstErr
}

// The three give the same total.
func Example_cheapLines() {
	data := csvLines(10_000)
	for _, work := range []func(string) (int64, error){lineACME, lineCents} {
		a, _ := totalLoop(data, work)
		b, _ := totalPipeline(context.Background(), data, 2, work)
		c, _ := totalChannels(data, 2, work)
		fmt.Println(a == b, a == c)
	}
	// Output:
	// true true
	// true true
}

func BenchmarkCheapLines(b *testing.B) {
	const n = 2_000_000
	data := csvLines(n)
	workers := runtime.GOMAXPROCS(0)
	for _, job := range []struct {
		name string
		work func(string) (int64, error)
	}{{"match", lineACME}, {"parse", lineCents}} {
		want, err := totalLoop(data, job.work)
		if err != nil {
			b.Fatal(err)
		}
		run := func(b *testing.B, f func() (int64, error)) {
			for b.Loop() {
				got, err := f()
				if err != nil || got != want {
					b.Fatalf("got %d, %v; want %d", got, err, want)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/line")
		}
		b.Run(job.name+"/loop", func(b *testing.B) { run(b, func() (int64, error) { return totalLoop(data, job.work) }) })
		b.Run(job.name+"/sluice", func(b *testing.B) {
			run(b, func() (int64, error) { return totalPipeline(context.Background(), data, workers, job.work) })
		})
		b.Run(job.name+"/channels", func(b *testing.B) {
			run(b, func() (int64, error) { return totalChannels(data, workers, job.work) })
		})
	}
}
