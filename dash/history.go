package dash

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/sluicehq/sluice"
)

// historyLen is how many one-second points of history a pipeline keeps:
// five minutes.
const historyLen = 300

// history is a pipeline's recent past, one point per second of its elapsed
// time, kept by the server so that a page opened (or reloaded) late still
// shows where the pipeline was stuck a few minutes ago, and so that
// /snapshot.json carries it too.
//
// Points are filled from readings, which are taken only when the board is
// read (a page open, /snapshot.json fetched). A rate is computed from the
// counters of two readings, so it is exact over the interval between them
// however long that is: when nobody has read the board for a while, the
// seconds in between all get that interval's average rate. A queue's fill
// is known only at a reading, so the seconds between two readings have
// none (NaN).
//
// Points live in two rings of historyLen slots, indexed by second modulo
// historyLen: point j (the second ending at elapsed time j s) is at slot
// j % historyLen while j > end-historyLen.
type history struct {
	end int64 // the newest point's second; 0: no point yet

	// The counters at the reading the newest point was computed from
	// (zero before the first: the pipeline's start, when all were 0).
	prevSeconds float64
	prevCount   []int64 // per stage, see through

	rate [][historyLen]float64 // per stage: items per second
	fill [][historyLen]float64 // per stage: input queue fill, 0 to 1, or NaN
}

// through is the count a stage's rate is computed from: the items it took
// from its input, or, for a source, the items it handed on.
func through(s sluice.StageStats) int64 {
	if s.Kind == "source" {
		return s.Out
	}
	return s.In
}

// add records a reading: one point for every whole second since the
// newest point, up to the reading's own second. A reading within the
// newest point's second adds nothing; the next one will count its items.
func (h *history) add(cur sluice.Snapshot) {
	now := cur.Elapsed.Seconds()
	sec := int64(now)
	if sec <= h.end {
		return
	}
	// Stages are only ever appended to a pipeline: a stage new since the
	// last reading started from zero, and has no points before now.
	for len(h.rate) < len(cur.Stages) {
		h.rate = append(h.rate, blank())
		h.fill = append(h.fill, blank())
		h.prevCount = append(h.prevCount, 0)
	}
	fills := inputFills(cur)
	dt := now - h.prevSeconds
	from := max(h.end+1, sec-historyLen+1)
	for i, s := range cur.Stages {
		n := through(s)
		r := float64(n-h.prevCount[i]) / dt
		for j := from; j <= sec; j++ {
			h.rate[i][j%historyLen] = r
			h.fill[i][j%historyLen] = math.NaN()
		}
		h.fill[i][sec%historyLen] = fills[i]
		h.prevCount[i] = n
	}
	h.end, h.prevSeconds = sec, now
}

func blank() (b [historyLen]float64) {
	for i := range b {
		b[i] = math.NaN()
	}
	return b
}

// series returns stage i's items per second and queue fill, oldest first,
// for the seconds first … h.end, where first is the oldest second kept.
func (h *history) series(i int) (first int64, rate, fill Series) {
	first = max(1, h.end-historyLen+1)
	if h.end == 0 || i >= len(h.rate) {
		return first, Series{}, Series{}
	}
	n := h.end - first + 1
	rate, fill = make(Series, 0, n), make(Series, 0, n)
	for j := first; j <= h.end; j++ {
		rate = append(rate, h.rate[i][j%historyLen])
		fill = append(fill, h.fill[i][j%historyLen])
	}
	return first, rate, fill
}

// inputFills returns, per stage, how full its fullest input queue is, as
// [Bottleneck] measures it; 0 for a source.
func inputFills(s sluice.Snapshot) []float64 {
	reads := make(map[string]float64, len(s.Stages))
	for _, e := range s.Edges {
		reads[e.To] = max(reads[e.To], edgeFill(e))
	}
	f := make([]float64, len(s.Stages))
	for i, st := range s.Stages {
		f[i] = reads[st.Name]
	}
	return f
}

// Series is a run of points, one per second, oldest first. In JSON each is
// a number, or null where it is not known.
type Series []float64

// MarshalJSON writes NaN as null and every number to three significant
// digits (rates) or three decimals (fills), which is all a chart shows.
func (s Series) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+6*len(s))
	b = append(b, '[')
	for i, v := range s {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case math.IsNaN(v) || math.IsInf(v, 0):
			b = append(b, "null"...)
		case math.Abs(v) < 1:
			b = strconv.AppendFloat(b, math.Round(v*1000)/1000, 'f', -1, 64)
		default:
			p, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
			b = strconv.AppendFloat(b, p, 'f', -1, 64)
		}
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads null as NaN.
func (s *Series) UnmarshalJSON(b []byte) error {
	var raw []*float64
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*s = make(Series, len(raw))
	for i, v := range raw {
		if v == nil {
			(*s)[i] = math.NaN()
		} else {
			(*s)[i] = *v
		}
	}
	return nil
}
