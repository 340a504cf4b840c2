package prom

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/sluicehq/sluice"
)

// Scrapes taken while pipelines run, finish and are added and removed
// (under -race): every scrape is consistent (a pedantic registry checks it
// against Describe), no counter of a series ever goes down, and no
// histogram bucket counts more samples than the histogram.
func TestScrapesDuringARunAreConsistentAndCountersNeverFall(t *testing.T) {
	c := NewCollector()
	reg := registry(t, c)
	run := func(name string) *sluice.Pipeline {
		p := sluice.New(context.Background(), sluice.Named(name))
		items := make([]int, 5000)
		for i := range items {
			items[i] = i
		}
		src := sluice.FromSlice(p, "src", items)
		sq := sluice.Map(p, "work", src, 2, func(_ context.Context, v int) (int, error) {
			if v%25 == 0 {
				time.Sleep(time.Millisecond)
			}
			return v * v, nil
		})
		sluice.ForEach(p, "sink", sq, 1, func(context.Context, int) error { return nil })
		return p
	}
	last := map[string]float64{} // counter series → last value
	check := func() {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				key := mf.GetName() + fmt.Sprint(labelsOf(m))
				switch mf.GetType() {
				case dto.MetricType_COUNTER:
					v := m.GetCounter().GetValue()
					if v < last[key] {
						t.Fatalf("%s fell from %v to %v", key, last[key], v)
					}
					last[key] = v
				case dto.MetricType_HISTOGRAM:
					h := m.GetHistogram()
					for _, b := range h.GetBucket() {
						if b.GetCumulativeCount() > h.GetSampleCount() {
							t.Fatalf("%s: bucket ≤%v holds %d samples, the histogram %d", key, b.GetUpperBound(), b.GetCumulativeCount(), h.GetSampleCount())
						}
					}
				}
			}
		}
	}
	for round := range 3 {
		a, b := run(fmt.Sprintf("a%d", round)), run(fmt.Sprintf("b%d", round))
		c.Add(a)
		c.Add(b)
		var wg sync.WaitGroup
		done := make(chan struct{})
		wg.Go(func() { // a second scraper, on a plain registry
			reg2 := prometheus.NewRegistry()
			reg2.MustRegister(c)
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, err := reg2.Gather(); err != nil {
					t.Error(err)
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
		waited := make(chan error, 2)
		go func() { waited <- a.Wait() }()
		go func() { waited <- b.Wait() }()
		for n := 0; n < 2; {
			select {
			case err := <-waited:
				if err != nil {
					t.Fatal(err)
				}
				n++
			default:
				check()
				time.Sleep(time.Millisecond)
			}
		}
		check()
		close(done)
		wg.Wait()
		c.Remove(a)
		c.Remove(b)
	}
}

func labelsOf(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

// A registry takes one Collector: registering it again, or a second one,
// is refused with prometheus.AlreadyRegisteredError, as the package doc
// says, rather than exporting every series twice.
func TestASecondCollectorOnOneRegistryIsRefused(t *testing.T) {
	c := NewCollector(orders(t, "a", 10))
	reg := registry(t, c)
	for i, again := range []*Collector{c, NewCollector(orders(t, "b", 10))} {
		var are prometheus.AlreadyRegisteredError
		if err := reg.Register(again); !errors.As(err, &are) {
			t.Fatalf("registration %d: %v; want a prometheus.AlreadyRegisteredError", i+2, err)
		}
	}
}
