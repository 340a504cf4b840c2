package market

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/market/internal/hist"
)

// Latencies is a histogram of durations, quantiles within 1/16 of the
// true value, and their exact maximum. The zero value is empty; it is not
// safe for concurrent use.
type Latencies struct {
	c   hist.Counts
	max time.Duration
}

// Add counts d (a negative d as 0).
func (l *Latencies) Add(d time.Duration) {
	d = max(d, 0)
	l.c.Add(uint64(d))
	l.max = max(l.max, d)
}

// Q returns the q-quantile, or 0 when empty. Interpolated inside its
// bucket, it never exceeds Max.
func (l *Latencies) Q(q float64) time.Duration {
	return min(time.Duration(l.c.Quantile(q)), l.max)
}

// Max returns the largest duration counted, or 0.
func (l *Latencies) Max() time.Duration { return l.max }

// Ms formats d in milliseconds, to two significant digits or so.
func Ms(d time.Duration) string {
	v := d.Seconds() * 1e3
	switch {
	case v < 1:
		return fmt.Sprintf("%.2fms", v)
	case v < 10:
		return fmt.Sprintf("%.1fms", v)
	}
	return fmt.Sprintf("%.0fms", v)
}

// SI formats v with a k or M suffix.
func SI(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
