//go:build race

package ring

// raceEnabled lets tests shrink their hammering under the race detector,
// which slows atomics and channel operations by an order of magnitude.
const raceEnabled = true
