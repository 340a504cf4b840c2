package dash

import "github.com/sluicehq/sluice"

// BottleneckRule is how [Bottleneck] picks a stage, in the words the page
// shows.
const BottleneckRule = "The bottleneck is the stage whose input queue is fullest, " +
	"among the stages whose input queue is at least half full while every queue they feed is less than half full: " +
	"it cannot keep up with what arrives, and nothing downstream holds it back. " +
	"A stage whose output queue is full is only waiting for the stage after it. " +
	"When no stage qualifies, the pipeline keeps up with its sources, or it is done."

// fullAt is the queue fill at which a queue counts as full for the rule.
const fullAt = 0.5

// Bottleneck returns the index in s.Stages of the stage that holds the
// pipeline back, by [BottleneckRule], or -1 if none does or the pipeline is
// done. Ties go to the stage added first.
//
// Edges are matched to stages by name, so stages that share a name are
// judged by all of their edges together.
func Bottleneck(s sluice.Snapshot) int {
	if s.Done {
		return -1
	}
	// The fullest queue each stage feeds.
	feeds := make(map[string]float64, len(s.Stages))
	for _, e := range s.Edges {
		feeds[e.From] = max(feeds[e.From], fill(e.Depth, e.Capacity))
	}
	best, bestFill := -1, 0.0
	for i, st := range s.Stages {
		in := fill(st.InDepth, st.InCapacity)
		if st.InCapacity == 0 || in < fullAt || feeds[st.Name] >= fullAt {
			continue
		}
		if in > bestFill {
			best, bestFill = i, in
		}
	}
	return best
}
