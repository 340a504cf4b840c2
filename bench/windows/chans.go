package main

import (
	"runtime"
	"sync"

	"github.com/sluicehq/sluice/bench/internal/windows"
)

// runChans is the program as Go's tutorials write it: a reader goroutine
// sends each line on a channel, GOMAXPROCS workers decode and fold into
// one map of accumulators under a mutex.
func runChans(src source) (windows.Result, error) {
	workers := runtime.GOMAXPROCS(0)
	var (
		mu       sync.Mutex
		l        windows.Loop
		firstErr error
		wg       sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	if src.file == nil {
		trades := make(chan windows.Trade, 1024)
		go func() {
			defer close(trades)
			g := windows.NewGen()
			for range src.n {
				trades <- g.Next()
			}
		}()
		for range workers {
			wg.Go(func() {
				for t := range trades {
					mu.Lock()
					l.Add(t)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return l.Close(), nil
	}
	lines := make(chan []byte, 1024)
	go func() {
		defer close(lines)
		if err := windows.Lines(src.file, func(line []byte) error {
			lines <- append([]byte(nil), line...)
			return nil
		}); err != nil {
			fail(err)
		}
	}()
	for range workers {
		wg.Go(func() {
			for line := range lines {
				t, err := windows.Decode(line)
				if err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				l.Add(t)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return l.Close(), firstErr
}
