package market

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The market events. On the wire an event is one line of comma-separated
// fields:
//
//	id,symbol,price,size,unix-nanoseconds
//
// e.g. "42,aapl,187.2300,100,1700000000000000000". Generate writes symbols
// in mixed case and prices with varying decimals, which Normalise tidies;
// a fraction of events is malformed on purpose.

// Event is a decoded, validated market event.
type Event struct {
	ID     uint64
	Symbol string
	Price4 int64 // price × 10⁴, rounded half up
	Size   int64
	TS     int64 // unix nanoseconds
}

// Tick is an event after normalisation: upper-case symbol, price in
// ten-thousandths, notional value.
type Tick struct {
	ID       uint64
	Symbol   string
	Price4   int64 // price × 10⁴
	Size     int64
	TS       int64 // unix nanoseconds
	Notional int64 // Price4 × Size
}

// RefData is a symbol's reference data.
type RefData struct {
	Name, Sector, Currency string
	Lot                    int64 // shares per lot
}

// symbolNames interns the symbols the generator sends: each of them, upper-
// and lower-case, maps to itself, so that decode keeps a known symbol
// without allocating a string for it.
var symbolNames = func() map[string]string {
	m := make(map[string]string, 2*len(symbols))
	for _, s := range symbols {
		m[s] = s
		l := lower(s)
		m[l] = l
	}
	return m
}()

// upperNames maps the lower-case form of each symbol to its upper-case form.
var upperNames = func() map[string]string {
	m := make(map[string]string, len(symbols))
	for _, s := range symbols {
		m[lower(s)] = s
	}
	return m
}()

// symbols the generator draws from, with their reference data.
var symbols = []string{"AAPL", "MSFT", "GOOG", "AMZN", "NVDA", "META", "TSLA", "BRK.B", "JPM", "V",
	"XOM", "UNH", "JNJ", "WMT", "PG", "MA", "HD", "CVX", "KO", "PEP"}

// RefStore stands in for a reference-data store that the pipeline queries once
// per batch: one Lookup costs one round trip (the latency NewRefs is
// given). It is safe for concurrent use.
type RefStore struct {
	mu      sync.RWMutex
	data    map[string]RefData
	latency time.Duration // simulated round trip per lookup
	lookups atomic.Int64
}

// NewRefs returns the reference data of the symbols Generate draws from,
// each Lookup sleeping latency first.
func NewRefs(latency time.Duration) *RefStore {
	r := &RefStore{data: make(map[string]RefData, len(symbols)), latency: latency}
	sectors := []string{"tech", "energy", "health", "finance", "consumer"}
	for i, s := range symbols {
		r.data[s] = RefData{Name: s + " Inc.", Sector: sectors[i%len(sectors)], Currency: "USD", Lot: 100}
	}
	return r
}

// Lookup returns the reference data of every symbol in syms that it knows.
func (r *RefStore) Lookup(syms map[string]RefData) {
	r.lookups.Add(1)
	if r.latency > 0 {
		time.Sleep(r.latency)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for s := range syms {
		if d, ok := r.data[s]; ok {
			syms[s] = d
		} else {
			delete(syms, s)
		}
	}
}

// Generate appends event number i to buf: well-formed, or with probability
// bad malformed in one of several ways. ts is its timestamp.
func Generate(buf []byte, rng *rand.Rand, i int, ts int64, bad float64) []byte {
	sym := symbols[rng.IntN(len(symbols))]
	if rng.IntN(2) == 0 {
		sym = lower(sym)
	}
	price := 10 + rng.Float64()*490
	size := int64(1 + rng.IntN(1000))
	if rng.Float64() < bad {
		switch rng.IntN(5) {
		case 0:
			return append(buf, "#corrupt#"...)
		case 1: // missing field
			buf = strconv.AppendInt(buf, int64(i), 10)
			buf = append(buf, ',')
			buf = append(buf, sym...)
			return append(buf, ",1.5"...)
		case 2:
			price = -price
		case 3:
			size = 0
		case 4:
			sym = "ZZZZ" // well-formed, but no reference data
		}
	}
	buf = strconv.AppendInt(buf, int64(i), 10)
	buf = append(buf, ',')
	buf = append(buf, sym...)
	buf = append(buf, ',')
	buf = strconv.AppendFloat(buf, price, 'f', 1+rng.IntN(4), 64)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, size, 10)
	buf = append(buf, ',')
	return strconv.AppendInt(buf, ts, 10)
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

var (
	errFields = errors.New("not 5 fields")
	errID     = errors.New("bad id")
	errSymbol = errors.New("bad symbol")
	errPrice  = errors.New("bad price")
	errSize   = errors.New("bad size")
	errTime   = errors.New("bad timestamp")
)

// Decode parses and validates one event line. It allocates nothing for a
// well-formed event of a known symbol: the numbers are read from the
// bytes, the symbol is interned.
func Decode(line []byte) (Event, error) {
	var f [5][]byte
	n := 0
	for n < 4 {
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			return Event{}, errFields
		}
		f[n], line = line[:i], line[i+1:]
		n++
	}
	if bytes.IndexByte(line, ',') >= 0 {
		return Event{}, errFields
	}
	f[4] = line
	if len(f[0]) == 0 {
		return Event{}, errFields
	}
	id, ok := parseDigits(f[0])
	if !ok {
		return Event{}, errID
	}
	if len(f[1]) == 0 || len(f[1]) > 8 {
		return Event{}, errSymbol
	}
	for _, c := range f[1] {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '.') {
			return Event{}, errSymbol
		}
	}
	price4, ok := parsePrice4(f[2])
	if !ok || price4 <= 0 || price4 >= 1e11 { // (0, 10⁷)
		return Event{}, errPrice
	}
	size, ok := parseDigits(f[3])
	if !ok || size == 0 || size > math.MaxInt64 {
		return Event{}, errSize
	}
	ts, ok := parseDigits(f[4])
	if !ok || ts == 0 || ts > math.MaxInt64 {
		return Event{}, errTime
	}
	sym, ok := symbolNames[string(f[1])] // no allocation for a known symbol
	if !ok {
		sym = string(f[1])
	}
	return Event{ID: id, Symbol: sym, Price4: price4, Size: int64(size), TS: int64(ts)}, nil
}

// parseDigits reads a decimal number of 1 to 19 digits, nothing else.
func parseDigits(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}

// parsePrice4 reads a price in ten-thousandths, rounded half up. The
// generator's form — 1 to 7 digits, then a point and up to 4 more — is
// read from the bytes; any other form strconv.ParseFloat accepts (an
// exponent, more decimals, a sign) goes through it.
func parsePrice4(b []byte) (int64, bool) {
	whole, frac, dot := bytes.Cut(b, []byte{'.'})
	if len(whole) > 0 && len(whole) <= 7 && len(frac) <= 4 && (dot || len(frac) == 0) {
		w, ok := parseDigits(whole)
		f, okf := uint64(0), true
		if len(frac) > 0 {
			f, okf = parseDigits(frac)
		}
		if ok && okf {
			for range 4 - len(frac) {
				f *= 10
			}
			return int64(w*1e4 + f), true
		}
	}
	p, err := strconv.ParseFloat(string(b), 64)
	if err != nil || !(p > -1e12 && p < 1e12) { // NaN too
		return 0, false
	}
	return int64(math.Floor(p*1e4 + 0.5)), true
}

// Normalise upper-cases the symbol.
func Normalise(e Event) Tick {
	sym := e.Symbol
	for i := 0; i < len(sym); i++ {
		if 'a' <= sym[i] && sym[i] <= 'z' {
			if u, ok := upperNames[sym]; ok {
				sym = u
			} else {
				sym = upper(sym)
			}
			break
		}
	}
	return Tick{ID: e.ID, Symbol: sym, Price4: e.Price4, Size: e.Size, TS: e.TS, Notional: e.Price4 * e.Size}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}

// EncodeEnriched appends the enriched event's line to buf:
//
//	id,symbol,price4,size,ts,notional,name,sector,currency,lots
func EncodeEnriched(buf []byte, t Tick, r RefData) []byte {
	buf = strconv.AppendUint(buf, t.ID, 10)
	buf = append(buf, ',')
	buf = append(buf, t.Symbol...)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, t.Price4, 10)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, t.Size, 10)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, t.TS, 10)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, t.Notional, 10)
	buf = append(buf, ',')
	buf = append(buf, r.Name...)
	buf = append(buf, ',')
	buf = append(buf, r.Sector...)
	buf = append(buf, ',')
	buf = append(buf, r.Currency...)
	buf = append(buf, ',')
	return strconv.AppendInt(buf, (t.Size+r.Lot-1)/r.Lot, 10)
}

// Lookups returns how many lookups r has answered.
func (r *RefStore) Lookups() int64 { return r.lookups.Load() }

// Known reports whether symbol, upper-case, has reference data: an event
// of any other symbol is dead-lettered by the pipelines.
func Known(symbol string) bool { return slices.Contains(symbols, symbol) }

// EventKey returns the upper-cased symbol of an event line, the key the
// generators produce it under (so that a symbol's events keep their
// order), or nil for a line without one.
func EventKey(line []byte) []byte {
	_, rest, ok := bytes.Cut(line, []byte{','})
	if !ok {
		return nil
	}
	sym, _, _ := bytes.Cut(rest, []byte{','})
	return bytes.ToUpper(sym)
}

// NumSymbols is how many symbols Generate draws from.
func NumSymbols() int { return len(symbols) }
