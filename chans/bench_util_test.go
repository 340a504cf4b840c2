package chans_test

import (
	"runtime"
	"testing"
)

// perItem reports ns/item and allocs/item for a benchmark that moves items
// items per b.Loop iteration. Call start before the loop and the returned
// function after it.
func perItem(b *testing.B, items int) func() {
	b.Helper()
	b.ReportAllocs()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	mallocs := ms.Mallocs
	return func() {
		b.Helper()
		runtime.ReadMemStats(&ms)
		total := float64(b.N) * float64(items)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/item")
		b.ReportMetric(float64(ms.Mallocs-mallocs)/total, "allocs/item")
	}
}
