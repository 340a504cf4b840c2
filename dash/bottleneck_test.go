package dash_test

import (
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dash"
)

// chain builds a snapshot of a straight pipeline: a source, then one stage
// per fill level given, each fill being how full that stage's input queue
// is (out of 1000 items). The last stage is a sink.
func chain(fills ...float64) sluice.Snapshot {
	names := []string{"src", "a", "b", "c", "d", "e"}
	snap := sluice.Snapshot{Pipeline: "p", Stages: []sluice.StageStats{{Name: "src", Kind: "source", Workers: 1, Running: 1}}}
	for i, f := range fills {
		depth := int64(f * 1000)
		snap.Edges = append(snap.Edges, sluice.EdgeStats{From: names[i], To: names[i+1], Depth: depth, Capacity: 1000, Policy: "block"})
		snap.Stages = append(snap.Stages, sluice.StageStats{Name: names[i+1], Kind: "map", Workers: 1, Running: 1, InDepth: depth, InCapacity: 1000})
	}
	return snap
}

func nameOf(s sluice.Snapshot, i int) string {
	if i < 0 {
		return "(none)"
	}
	return s.Stages[i].Name
}

func checkBottleneck(t *testing.T, s sluice.Snapshot, want string) {
	t.Helper()
	if got := nameOf(s, dash.Bottleneck(s)); got != want {
		t.Fatalf("got bottleneck %s, want %s", got, want)
	}
}

func TestBottleneckIsTheStageWhoseInputIsFullAndOutputIsNot(t *testing.T) {
	// src → a (queue full) → b (queue 90% full) → c (queue nearly empty):
	// a and src wait for b; b cannot keep up; c waits for b.
	checkBottleneck(t, chain(1, 0.9, 0.05), "b")
}

func TestBottleneckSkipsStagesHeldUpByAFullOutput(t *testing.T) {
	// Every queue is full up to the sink: the sink is what holds the rest.
	checkBottleneck(t, chain(1, 1, 1), "c")
}

func TestNoBottleneckWhileEveryQueueIsLessThanHalfFull(t *testing.T) {
	checkBottleneck(t, chain(0.2, 0.49, 0), "(none)")
}

func TestBottleneckNeedsItsInputAtLeastHalfFull(t *testing.T) {
	checkBottleneck(t, chain(0.1, 0.5, 0.1), "b")
}

func TestNoBottleneckOnceThePipelineIsDone(t *testing.T) {
	s := chain(1, 0.9, 0.05)
	s.Done = true
	checkBottleneck(t, s, "(none)")
}

func TestBottleneckIsTheFullerOfTwoBranches(t *testing.T) {
	// src → split → {left 60%, right 80%}: both qualify, right is fuller.
	s := sluice.Snapshot{
		Stages: []sluice.StageStats{
			{Name: "src", Kind: "source"},
			{Name: "split", Kind: "broadcast", InDepth: 0, InCapacity: 100},
			{Name: "left", Kind: "for-each", InDepth: 60, InCapacity: 100},
			{Name: "right", Kind: "for-each", InDepth: 80, InCapacity: 100},
		},
		Edges: []sluice.EdgeStats{
			{From: "src", To: "split", Depth: 0, Capacity: 100},
			{From: "split", To: "left", Depth: 60, Capacity: 100},
			{From: "split", To: "right", Depth: 80, Capacity: 100},
		},
	}
	checkBottleneck(t, s, "right")
}

func TestSourcesAreNeverTheBottleneck(t *testing.T) {
	// A source has no input queue; when it is the slow part every queue
	// is empty and the rule names no stage.
	checkBottleneck(t, chain(0, 0, 0), "(none)")
}
