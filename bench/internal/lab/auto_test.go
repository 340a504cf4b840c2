package lab

import (
	"fmt"
	"slices"
	"testing"
)

func TestAutoRunsInTheMiddleOfTheFixedCounts(t *testing.T) {
	for _, tc := range []struct{ counts, want []int }{
		{[]int{1, 2, 4, 8, 16, 32, 64, 128, 256}, []int{1, 2, 4, 8, 16, 0, 32, 64, 128, 256}},
		{[]int{1, 16, 256}, []int{1, 16, 0, 256}},
		{[]int{1, 256}, []int{1, 0, 256}},
	} {
		if got := autoOrder(tc.counts); !slices.Equal(got, tc.want) {
			t.Errorf("autoOrder(%v) = %v, want %v", tc.counts, got, tc.want)
		}
	}
}

// autoRow is a row of the auto experiment with the given steady
// throughput and p99 per round, and windows of 250 ms at that throughput
// except where dips says (window → its throughput).
func autoRow(variant string, workers float64, x, p99 []float64, dips map[int]float64) Row {
	m := Metrics{"workers": workers}
	for r := range x {
		m[fmt.Sprintf("r%d/steady_per_s", r)] = x[r]
		m[fmt.Sprintf("r%d/p99_ms", r)] = p99[r]
		for j := range 8 {
			w := x[r]
			if d, ok := dips[j]; ok && r == 0 {
				w = d
			}
			m[fmt.Sprintf("r%d/win%03d", r, j)] = w
		}
	}
	return Row{Group: "g", Variant: variant, Status: statusOK, Metrics: m}
}

// Each round compares Auto with that round's best fixed count: a machine
// that is slower in one round than in another moves both.
func TestAutoFinishComparesWithinARound(t *testing.T) {
	rows := []Row{
		autoRow("fixed 8", 8, []float64{100, 50, 80}, []float64{1, 2, 1}, nil),
		autoRow("fixed 16", 16, []float64{90, 60, 100}, []float64{0.5, 1, 3}, nil),
		autoRow(autoVariant, 12, []float64{95, 57, 90}, []float64{1, 1.5, 1.2}, map[int]float64{0: 10, 1: 10, 5: 85}),
	}
	autoFinish(rows)
	a := rows[2].Metrics
	// Rounds: 95/100, 57/60, 90/100.
	if a["vs_best"] != 0.95 || a["vs_best_min"] != 0.9 || a["vs_best_max"] != 0.95 {
		t.Errorf("vs_best %v (%v–%v), want 0.95 (0.9–0.95)", a["vs_best"], a["vs_best_min"], a["vs_best_max"])
	}
	// The p99 of the round's best, or of a count within 5 % of its
	// throughput with a lower p99: 1 (fixed 8; fixed 16 is 10 % slower),
	// 1 (fixed 16), 3 (fixed 16).
	if got := []float64{a["r0/p99_ms"] / 1, a["r1/p99_ms"] / 1, a["r2/p99_ms"] / 3}; a["p99_vs_best"] != 1 || a["p99_vs_best_max"] != 1.5 {
		t.Errorf("p99_vs_best %v, max %v, want 1 and 1.5 (rounds %v)", a["p99_vs_best"], a["p99_vs_best_max"], got)
	}
	if a["r0/best_workers"] != 8 || a["r1/best_workers"] != 16 {
		t.Errorf("best counts %v, %v, want 8 and 16", a["r0/best_workers"], a["r1/best_workers"])
	}
	// Round 0 holds 90 % from window 2 on (a dip in window 5 to 85 of
	// 100, averaged with its neighbour, stays above); the others from 0.
	if a["r0/reach_s"] != 0.5 || a["reach_s"] != 0 || a["reach_s_max"] != 0.5 {
		t.Errorf("reach %v (round 0 %v, latest %v), want 0, 0.5, 0.5", a["reach_s"], a["r0/reach_s"], a["reach_s_max"])
	}
	// Fixed 8 holds the best in round 0 (it is the best) and never in
	// the others.
	if f := rows[0].Metrics; f["r0/reach_s"] != 0 || f["reach_s"] != -1 || f["vs_best_max"] != 1 {
		t.Errorf("fixed 8: reach %v in round 0, %v median, vs_best_max %v; want 0, -1 and 1", f["r0/reach_s"], f["reach_s"], f["vs_best_max"])
	}
}

func TestAutoFinishSaysNeverForARowThatDoesNotHold(t *testing.T) {
	rows := []Row{
		autoRow("fixed 8", 8, []float64{100}, []float64{1}, nil),
		autoRow(autoVariant, 8, []float64{100}, []float64{1}, map[int]float64{7: 10}),
	}
	autoFinish(rows)
	if a := rows[1].Metrics; a["reach_s"] != -1 || a["reach_s_max"] != -1 {
		t.Errorf("reach %v, latest %v, want -1 (never): the last 500 ms fell under 90 %%", a["reach_s"], a["reach_s_max"])
	}
}
