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
// A queue's fill is the larger of its fill in items and in chunks: an edge
// whose chunk slots are all taken blocks its producer even when the chunks
// are partly filled.
func Bottleneck(s sluice.Snapshot) int {
	if s.Done {
		return -1
	}
	// The fullest queue each stage feeds, and the fullest it reads.
	feeds := make(map[string]float64, len(s.Stages))
	reads := make(map[string]float64, len(s.Stages))
	for _, e := range s.Edges {
		f := edgeFill(e)
		feeds[e.From] = max(feeds[e.From], f)
		reads[e.To] = max(reads[e.To], f)
	}
	best, bestFill := -1, 0.0
	for i, st := range s.Stages {
		in, hasInput := reads[st.Name]
		if !hasInput || in < fullAt || feeds[st.Name] >= fullAt {
			continue
		}
		if in > bestFill {
			best, bestFill = i, in
		}
	}
	return best
}

// edgeFill is how full an edge is, from 0 to 1.
func edgeFill(e sluice.EdgeStats) float64 {
	return max(fill(e.Depth, e.Capacity), fill(int64(e.Chunks), e.ChunkCap))
}
