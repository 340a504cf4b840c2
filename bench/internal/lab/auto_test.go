package lab

import (
	"fmt"
	"math"
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
// throughput and p99 per round (and their medians, as the runner keeps
// them), and windows of 250 ms at that throughput except where dips says
// (window → its throughput in round 0).
func autoRow(variant string, workers float64, x, p99 []float64, dips map[int]float64) Row {
	m := Metrics{"workers": workers, "steady_per_s": median(x), "p99_ms": median(p99)}
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

// The best fixed count is the one with the best median over the rounds,
// and each round compares Auto with that count's figure of the same
// round: a machine that is slower in one round than in another moves
// both.
func TestAutoFinishComparesWithinARound(t *testing.T) {
	rows := []Row{
		autoRow("fixed 8", 8, []float64{100, 50, 80}, []float64{1, 2, 1}, nil),
		autoRow("fixed 16", 16, []float64{90, 60, 100}, []float64{0.5, 1, 3}, nil),
		autoRow("fixed 32", 32, []float64{88, 58, 96}, []float64{0.4, 0.8, 2}, nil),
		autoRow(autoVariant, 12, []float64{95, 57, 90}, []float64{1, 1.5, 1.2}, map[int]float64{0: 10, 1: 10, 5: 85}),
	}
	autoFinish(rows)
	a := rows[3].Metrics
	// Fixed 16 has the best median (90; fixed 8 had the best round).
	// Rounds: 95/90, 57/60, 90/100.
	if a["best_workers"] != 16 || a["vs_best"] != 0.95 || a["vs_best_min"] != 0.9 || math.Abs(a["vs_best_max"]-95.0/90) > 1e-9 {
		t.Errorf("best %v, vs_best %v (%v–%v), want 16 and 0.95 (0.9–1.06)", a["best_workers"], a["vs_best"], a["vs_best_min"], a["vs_best_max"])
	}
	// The p99 of fixed 32, within 5 % of fixed 16's throughput with a
	// lower median p99: rounds 1/0.4, 1.5/0.8, 1.2/2.
	if a["best_p99_workers"] != 32 || a["p99_vs_best"] != 1.875 || a["p99_vs_best_max"] != 2.5 {
		t.Errorf("p99 against %v: %v, max %v, want against 32: 1.875 and 2.5", a["best_p99_workers"], a["p99_vs_best"], a["p99_vs_best_max"])
	}
	// Round 0 holds 90 % of 90 from window 2 on (a dip in window 5 to
	// 85, averaged with its neighbour, stays above); the others from 0.
	if a["r0/reach_s"] != 0.5 || a["reach_s"] != 0 || a["reach_s_max"] != 0.5 {
		t.Errorf("reach %v (round 0 %v, latest %v), want 0, 0.5, 0.5", a["reach_s"], a["r0/reach_s"], a["reach_s_max"])
	}
	// Fixed 8 holds it in round 0 (100 of 90) and in no other.
	if f := rows[0].Metrics; f["r0/reach_s"] != 0 || f["reach_s"] != -1 {
		t.Errorf("fixed 8: reach %v in round 0, %v median; want 0 and -1", f["r0/reach_s"], f["reach_s"])
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
