package metrics_test

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/metrics"
)

func ExampleRead() {
	p := sluice.New(context.Background(), sluice.Named("orders"))
	sluice.Collect(p, "store", sluice.FromSlice(p, "in", []int{1, 2, 3}))
	_ = p.Wait()
	metrics.Read(p.Stats(), func(x metrics.Sample) {
		if x.Metric.Name == "sluice.stage.items" {
			fmt.Println(x.Metric.Name, x.Metric.LabelNames(), x.Labels, x.Value)
		}
	})
	// Output:
	// sluice.stage.items [pipeline stage direction] [orders in in] 0
	// sluice.stage.items [pipeline stage direction] [orders in out] 3
	// sluice.stage.items [pipeline stage direction] [orders store in] 3
	// sluice.stage.items [pipeline stage direction] [orders store out] 0
}

func ExamplePipelines() {
	var shown metrics.Pipelines
	a := sluice.New(context.Background(), sluice.Named("orders"))
	b := sluice.New(context.Background(), sluice.Named("orders"))
	for _, p := range []*sluice.Pipeline{a, b} {
		sluice.Collect(p, "all", sluice.FromSlice(p, "in", []int{1}))
		_ = p.Wait()
	}
	fmt.Println(shown.Add(a))
	fmt.Println(shown.Add(b))
	fmt.Println(len(shown.List()))
	// Output:
	// <nil>
	// a pipeline named "orders" is already exported; name pipelines apart with sluice.Named or remove the old one
	// 1
}

func ExampleAutoReasons() {
	fmt.Println(metrics.AutoReasons())
	// Output: [start grow no-gain latency failing idle throttled probe]
}

func ExampleEverySeries() {
	s := metrics.EverySeries("p")
	names := map[string]bool{}
	metrics.Read(s, func(x metrics.Sample) { names[x.Metric.Name] = true })
	fmt.Println(len(names) == len(metrics.List()))
	// Output: true
}
