package auto

import "fmt"

// Reason is why the count changed.
type Reason int

const (
	None       Reason = iota // the count did not change
	Start                    // the count the stage was built with
	Grow                     // more workers raised throughput, or workers removed are brought back
	NoGain                   // throughput did not rise with the workers last added
	Latency                  // the time per item climbed above what it was at the same count
	Failing                  // calls failed more with more workers: errors or timeouts per item rose
	Idle                     // workers waited for input or room most of the time
	Throttled                // workers waited on the stage's Throttle most of the time
	Probe                    // a step to a count nearby, to see whether it does better
	lastReason = Probe
)

var reasonNames = [...]string{"", "start", "grow", "no-gain", "latency", "failing", "idle", "throttled", "probe"}

// Reasons returns every reason but None, in order.
func Reasons() []Reason {
	rs := make([]Reason, 0, lastReason)
	for r := Start; r <= lastReason; r++ {
		rs = append(rs, r)
	}
	return rs
}

// Valid reports whether r is one of the reasons above.
func (r Reason) Valid() bool { return r >= None && r <= lastReason }

// String returns the reason's name ("" for None).
func (r Reason) String() string {
	if !r.Valid() {
		return fmt.Sprintf("Reason(%d)", int(r))
	}
	return reasonNames[r]
}

// Decision is what a controller decides from a sample: the count to run,
// and, when it changed, why (Reason, and Why with the figures that
// decided it). A Decision with Reason None leaves the count as it was.
type Decision struct {
	Count  int
	Reason Reason
	Why    string
}
