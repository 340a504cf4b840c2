package seed002

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestExpectedSumMatchesADirectLoop(t *testing.T) {
	nums := Numbers(37)
	for _, n := range []int{1, 36, 37, 38, 1000} {
		want, j := 0, 0
		for range n {
			want += nums[j] * nums[j]
			if j++; j == len(nums) {
				j = 0
			}
		}
		if got := ExpectedSum(nums, n); got != want {
			t.Fatalf("n=%d: got %d, want %d", n, got, want)
		}
	}
}

func TestNumbersAreTheSameEveryRunAndBelowAHundred(t *testing.T) {
	a, b := Numbers(1024), Numbers(1024)
	for i := range a {
		if a[i] != b[i] || a[i] < 0 || a[i] >= 100 {
			t.Fatalf("Numbers(1024)[%d] = %d then %d, want one value in [0, 100)", i, a[i], b[i])
		}
	}
}
