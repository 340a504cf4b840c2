package main

import (
	"strings"
	"testing"
	"time"
)

// A run's rate is printed at a precision that suits its size: the demo's
// tens of thousands of events per second must not show as "0.0e6".
func TestFiguresStringScalesTheRate(t *testing.T) {
	for _, c := range []struct {
		n    int
		wall time.Duration
		want string
	}{
		{200_000, 5 * time.Second, "values/s 40.0k "},
		{50_000_000, 2 * time.Second, "values/s 25.00M "},
		{300, time.Second, "values/s 300 "},
	} {
		got := figures{N: c.n, Wall: c.wall, User: time.Second}.String()
		if !strings.Contains(got, c.want) {
			t.Errorf("figures{N: %d, Wall: %v}.String() = %q, want it to contain %q", c.n, c.wall, got, c.want)
		}
	}
}
