package sluice_test

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice"
)

// queueStats stands for a connector's statistics (kafkax.SourceStats,
// say), which its Stats method returns.
type queueStats struct{ Stored, Failed int64 }

func ExamplePipeline_AttachConnector() {
	p := sluice.New(context.Background())
	var stored int64
	sluice.ForEach(p, "store", sluice.FromSlice(p, "in", []int{1, 2, 3}), 1, func(context.Context, int) error {
		stored++
		return nil
	})
	// A connector's stage constructor does this: its counts then travel
	// in every snapshot, under the stage's name.
	p.AttachConnector("store", &stored, func() any { return queueStats{Stored: stored} })
	_ = p.Wait()
	st, _ := p.Stats().Stage("store")
	fmt.Printf("%+v\n", st.Connector)
	// Output: {Stored:3 Failed:0}
}
