package prom_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/prom"
)

// Register a collector for a pipeline, then scrape it — here by gathering
// the registry directly, as promhttp.HandlerFor(reg, …) would for a
// Prometheus server.
func ExampleNewCollector() {
	p := sluice.New(context.Background(), sluice.Named("words"))
	src := sluice.FromSlice(p, "words", []string{"a", "bb", "ccc", "dddd"})
	long := sluice.Filter(p, "long", src, 1, func(_ context.Context, s string) (bool, error) { return len(s) > 1, nil })
	sluice.Collect(p, "keep", long)

	reg := prometheus.NewRegistry()
	reg.MustRegister(prom.NewCollector(p))
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}

	fams, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range fams {
		if f.GetName() != "sluice_stage_items_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := ""
			for _, l := range m.GetLabel() {
				labels += fmt.Sprintf(" %s=%s", l.GetName(), l.GetValue())
			}
			fmt.Printf("%s%s %v\n", f.GetName(), labels, m.GetCounter().GetValue())
		}
	}
	// Output:
	// sluice_stage_items_total direction=in pipeline=words stage=keep 3
	// sluice_stage_items_total direction=in pipeline=words stage=long 4
	// sluice_stage_items_total direction=in pipeline=words stage=words 0
	// sluice_stage_items_total direction=out pipeline=words stage=keep 0
	// sluice_stage_items_total direction=out pipeline=words stage=long 3
	// sluice_stage_items_total direction=out pipeline=words stage=words 4
}

// A collector can follow pipelines that start and finish while it is
// registered: add each run, and remove it once it has been scraped.
func ExampleCollector_Add() {
	c := prom.NewCollector()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	for run := range 3 {
		p := sluice.New(context.Background(), sluice.Named("nightly"))
		sluice.Collect(p, "all", sluice.FromSlice(p, "items", make([]int, run+1)))
		c.Add(p)
		if err := p.Wait(); err != nil {
			fmt.Println(err)
		}
		fams, _ := reg.Gather()
		for _, f := range fams {
			if f.GetName() == "sluice_stage_items_total" {
				fmt.Println("run", run, "items out of the source:", f.GetMetric()[len(f.GetMetric())-1].GetCounter().GetValue())
			}
		}
		c.Remove(p) // the next run reuses the name
	}
	// Output:
	// run 0 items out of the source: 1
	// run 1 items out of the source: 2
	// run 2 items out of the source: 3
}
