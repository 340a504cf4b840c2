//go:build race

package sluice_test

// raceEnabled: the race detector makes sync.Pool drop a quarter of what is
// put back, so allocation tests measure nothing under it.
const raceEnabled = true
