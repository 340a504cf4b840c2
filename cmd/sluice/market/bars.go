package market

import (
	"cmp"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// BarWidth is the length of a bar's window: bars are one-second tumbling
// windows of event time, [Start, Start+BarWidth), Start a multiple of it
// since the Unix epoch.
const BarWidth = time.Second

// Bar is a symbol's OHLC bar over one window of event time: the first,
// highest, lowest and last price, the volume, the notional (Σ price ×
// size, in ten-thousandths) from which VWAP derives, and the trades it
// folded. "First" and "last" are by event time, ties broken by the
// event's id, so that a bar does not depend on the order its events
// arrived in. The zero Bar is empty; Add folds a tick into it.
type Bar struct {
	Symbol                 string
	Start                  int64 // window start, unix nanoseconds
	Open, High, Low, Close int64 // prices × 10⁴
	Volume                 int64
	Notional               int64 // Σ Price4 × Size
	Trades                 int64
	// Revision counts the times the window was emitted before this one:
	// 0 for its first emission, 1 for the first update by a late event
	// within the allowed lateness, and so on. The reference leaves it 0.
	Revision int64

	openTS, closeTS int64 // event times of the open and the close
	openID, closeID uint64
}

// WindowStart returns the start of the bar window event time ts falls in.
func WindowStart(ts int64) int64 {
	w := int64(BarWidth)
	s := ts - ts%w
	if ts < 0 && ts%w != 0 {
		s -= w
	}
	return s
}

// Add folds t into b, whose window t must fall in (the first Add sets the
// symbol and the window).
func (b *Bar) Add(t Tick) {
	if b.Trades == 0 {
		*b = Bar{Symbol: t.Symbol, Start: WindowStart(t.TS), Open: t.Price4, High: t.Price4, Low: t.Price4, Close: t.Price4,
			Volume: t.Size, Notional: t.Notional, Trades: 1, Revision: b.Revision,
			openTS: t.TS, closeTS: t.TS, openID: t.ID, closeID: t.ID}
		return
	}
	b.High, b.Low = max(b.High, t.Price4), min(b.Low, t.Price4)
	b.Volume += t.Size
	b.Notional += t.Notional
	b.Trades++
	if t.TS < b.openTS || t.TS == b.openTS && t.ID < b.openID {
		b.Open, b.openTS, b.openID = t.Price4, t.TS, t.ID
	}
	if t.TS > b.closeTS || t.TS == b.closeTS && t.ID > b.closeID {
		b.Close, b.closeTS, b.closeID = t.Price4, t.TS, t.ID
	}
}

// VWAP returns the bar's volume-weighted average price, × 10⁴.
func (b *Bar) VWAP() float64 {
	if b.Volume == 0 {
		return 0
	}
	return float64(b.Notional) / float64(b.Volume)
}

// Same reports whether a and b are the same bar, revision aside.
func (b Bar) Same(o Bar) bool {
	return b.Symbol == o.Symbol && b.Start == o.Start && b.Open == o.Open && b.High == o.High && b.Low == o.Low &&
		b.Close == o.Close && b.Volume == o.Volume && b.Notional == o.Notional && b.Trades == o.Trades
}

// BarKey is what identifies a bar: its symbol and window.
type BarKey struct {
	Symbol string
	Start  int64
}

// Key returns b's key.
func (b *Bar) Key() BarKey { return BarKey{b.Symbol, b.Start} }

// Lateness is the event-time rule the bar pipelines and ReferenceBars
// share. The watermark is the largest event time seen less
// OutOfOrderness; a window is emitted once the watermark reaches its
// end, and a tick whose window ended AllowedLateness or more before the
// watermark is late: counted, and in no bar.
type Lateness struct {
	OutOfOrderness  time.Duration
	AllowedLateness time.Duration
}

// DefaultLateness is the bar pipelines' rule: out-of-orderness
// DefaultDisorder (the generators' bound) and 1 second of allowed
// lateness. A tick is judged against its own partition's watermark (see
// ReferenceBars), so a member that takes over a partition's backlog after
// a rebalance does not find it late; the second covers a window emitted
// before a partition that joined behind was heard from.
func DefaultLateness() Lateness {
	return Lateness{OutOfOrderness: DefaultDisorder, AllowedLateness: time.Second}
}

// IsLate reports whether a tick at event time ts is late once the
// watermark is wm.
func (l Lateness) IsLate(ts, wm int64) bool {
	return WindowStart(ts)+int64(BarWidth)+int64(l.AllowedLateness) <= wm
}

// ReferenceBars computes the bars of ticks, taken in the order given,
// by a plain loop, with the rule l and the watermark of sluice's Window
// stage: each partition's largest event time (partition says a tick's),
// their minimum over the partitions seen so far, less OutOfOrderness,
// never going back; a tick first raises its partition's largest time,
// then is judged against the lower of that watermark and its own
// partition's (a partition behind the others is not late for being
// behind). It returns the bars by key and
// the ticks it found late. It is the answer the pipelines' bars are
// checked against.
//
// Which ticks are late depends on how the partitions interleave, except
// for ticks far from the line between late and on time — as the
// generators' are: an on-time tick lags by at most DefaultDisorder, which
// DefaultLateness's OutOfOrderness covers, and a late one by
// DefaultLateBy more, far beyond it and beyond the skew between
// partitions that a reader lets build up once it reads them all.
func ReferenceBars(ticks []Tick, partition func(Tick) int, l Lateness) (map[BarKey]Bar, []Tick) {
	top := map[int]int64{}
	bars := make(map[BarKey]Bar)
	var late []Tick
	wm := int64(minInt64) // the watermark: never goes back
	for _, t := range ticks {
		p := partition(t)
		if v, ok := top[p]; !ok || t.TS > v {
			top[p] = t.TS
			low := int64(math.MaxInt64)
			for _, v := range top {
				low = min(low, v)
			}
			wm = max(wm, low-int64(l.OutOfOrderness))
		}
		if l.IsLate(t.TS, min(wm, top[p]-int64(l.OutOfOrderness))) {
			late = append(late, t)
			continue
		}
		k := BarKey{t.Symbol, WindowStart(t.TS)}
		b := bars[k]
		b.Add(t)
		bars[k] = b
	}
	return bars, late
}

// OnePartition is a partition function for ReferenceBars that puts every
// tick in one partition.
func OnePartition(Tick) int { return 0 }

const minInt64 = -1 << 63

// BarDiff compares bars got with bars want (revisions aside) and returns
// the keys missing from got, those in both that differ, and those in got
// only, each sorted.
func BarDiff(got, want map[BarKey]Bar) (missing, different, extra []BarKey) {
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing = append(missing, k)
		case !g.Same(w):
			different = append(different, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	for _, s := range [][]BarKey{missing, different, extra} {
		slices.SortFunc(s, compareKeys)
	}
	return missing, different, extra
}

func compareKeys(a, b BarKey) int {
	return cmp.Or(strings.Compare(a.Symbol, b.Symbol), cmp.Compare(a.Start, b.Start))
}

// SortedBars returns the bars of m sorted by symbol, then window.
func SortedBars(m map[BarKey]Bar) []Bar {
	keys := slices.SortedFunc(maps.Keys(m), compareKeys)
	out := make([]Bar, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

// AppendBar appends b's record on the bars topic to buf, one line:
//
//	symbol,start,open,high,low,close,volume,notional,trades,revision
//
// prices × 10⁴, start in unix nanoseconds. Its key is the symbol.
func AppendBar(buf []byte, b *Bar) []byte {
	buf = append(buf, b.Symbol...)
	for _, v := range [...]int64{b.Start, b.Open, b.High, b.Low, b.Close, b.Volume, b.Notional, b.Trades, b.Revision} {
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, v, 10)
	}
	return buf
}

var errBarLine = errors.New("not a bar line (symbol and 9 integers)")

// ParseBar reads a line AppendBar wrote.
func ParseBar(line []byte) (Bar, error) {
	f := strings.Split(string(line), ",")
	if len(f) != 10 || f[0] == "" {
		return Bar{}, errBarLine
	}
	var v [9]int64
	for i := range v {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			return Bar{}, errBarLine
		}
		v[i] = n
	}
	return Bar{Symbol: f[0], Start: v[0], Open: v[1], High: v[2], Low: v[3], Close: v[4], Volume: v[5],
		Notional: v[6], Trades: v[7], Revision: v[8]}, nil
}
