package main

import "github.com/sluicehq/sluice/bench/internal/windows"

// runLoop is the hand-written one-goroutine program: read a line, decode
// it, fold it into a map of accumulators.
func runLoop(src source) (windows.Result, error) {
	var l windows.Loop
	if src.file == nil {
		g := windows.NewGen()
		for range src.n {
			l.Add(g.Next())
		}
		return l.Close(), nil
	}
	err := windows.Lines(src.file, func(line []byte) error {
		t, err := windows.Decode(line)
		if err != nil {
			return err
		}
		l.Add(t)
		return nil
	})
	return l.Close(), err
}
