package market

import "time"

// EventTimes gives each generated event its own event time: the moment it
// is produced, less a lag drawn from its id and Seed alone, so that the
// same event always gets the same time and a test recomputes it from the
// id. An on-time event lags by up to Disorder (uniform, to the
// nanosecond), which puts the events of one symbol out of order by as
// much; a late one lags by LateBy more. The zero value gives no lag at
// all: the event time is the produce time.
type EventTimes struct {
	Seed     uint64
	Disorder time.Duration // an on-time event lags by a uniform [0, Disorder]
	Late     float64       // the fraction of events that are late, in [0, 1]
	LateBy   time.Duration // a late event's extra lag
}

// The generators' defaults (DefaultEventTimes).
const (
	DefaultDisorder = 100 * time.Millisecond
	DefaultLateBy   = 10 * time.Minute
)

// DefaultEventTimes are the event times the generators give unless told
// otherwise: up to DefaultDisorder of disorder, one event in a thousand
// late by DefaultLateBy.
func DefaultEventTimes() EventTimes {
	return EventTimes{Seed: 4, Disorder: DefaultDisorder, Late: 0.001, LateBy: DefaultLateBy}
}

// Lag returns how far the event time of event id lags its produce time.
func (t EventTimes) Lag(id uint64) time.Duration {
	h := mix(t.Seed ^ mix(id+0x9e3779b97f4a7c15))
	var lag time.Duration
	if t.Disorder > 0 {
		lag = time.Duration(h % uint64(t.Disorder+1))
	}
	if t.IsLate(id) {
		lag += t.LateBy
	}
	return lag
}

// IsLate reports whether event id is one of the late ones.
func (t EventTimes) IsLate(id uint64) bool {
	if t.Late <= 0 {
		return false
	}
	h := mix(^t.Seed ^ mix(id))
	return float64(h>>11)/(1<<53) < t.Late
}

// At returns the event time of event id produced at produced (unix
// nanoseconds).
func (t EventTimes) At(id uint64, produced int64) int64 { return produced - int64(t.Lag(id)) }

// mix is splitmix64's finaliser: a well-spread 64-bit hash of x.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
