package main

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	natsx "github.com/sluicehq/sluice/connect/natsx"
)

// Seed 004's market events. On the wire an event is one line of
// comma-separated fields:
//
//	id,symbol,price,size,unix-nanoseconds
//
// e.g. "42,aapl,187.2300,100,1700000000000000000". The generator sends
// symbols in mixed case and prices with varying decimals, which the
// pipeline normalises; a fraction of events is malformed on purpose.

// event is a decoded, validated market event.
type event struct {
	id     string
	symbol string
	price  float64
	size   int64
	ts     int64 // unix nanoseconds
}

// tick is an event after normalisation: upper-case symbol, price in
// ten-thousandths, notional value.
type tick struct {
	id       string
	symbol   string
	price4   int64 // price × 10⁴
	size     int64
	ts       int64
	notional int64 // price4 × size
}

// item travels through the pipeline after normalisation: the message it
// came from (to be acknowledged once its result is stored) and its tick.
type item struct {
	msg  natsx.Msg
	tick tick
}

// refData is a symbol's reference data.
type refData struct {
	name, sector, currency string
	lot                    int64
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

// refService stands in for the reference-data store that the market-event write-up queried
// per batch: one Lookup per batch, costing one round trip.
type refService struct {
	mu      sync.RWMutex
	data    map[string]refData
	latency time.Duration // simulated round trip per lookup
	lookups atomic.Int64
}

func newRefService(latency time.Duration) *refService {
	r := &refService{data: make(map[string]refData, len(symbols)), latency: latency}
	sectors := []string{"tech", "energy", "health", "finance", "consumer"}
	for i, s := range symbols {
		r.data[s] = refData{name: s + " Inc.", sector: sectors[i%len(sectors)], currency: "USD", lot: 100}
	}
	return r
}

// Lookup returns the reference data of every symbol in syms that it knows.
func (r *refService) Lookup(syms map[string]refData) {
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

// genEvent appends event number i to buf: well-formed, or with probability
// bad malformed in one of several ways. ts is its timestamp.
func genEvent(buf []byte, rng *rand.Rand, i int, ts int64, bad float64) []byte {
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
	errSymbol = errors.New("bad symbol")
	errPrice  = errors.New("bad price")
	errSize   = errors.New("bad size")
	errTime   = errors.New("bad timestamp")
)

// decode parses and validates one event line.
func decode(line []byte) (event, error) {
	var f [5][]byte
	n := 0
	for n < 4 {
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			return event{}, errFields
		}
		f[n], line = line[:i], line[i+1:]
		n++
	}
	if bytes.IndexByte(line, ',') >= 0 {
		return event{}, errFields
	}
	f[4] = line
	if len(f[0]) == 0 {
		return event{}, errFields
	}
	if len(f[1]) == 0 || len(f[1]) > 8 {
		return event{}, errSymbol
	}
	for _, c := range f[1] {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '.') {
			return event{}, errSymbol
		}
	}
	price, err := strconv.ParseFloat(string(f[2]), 64)
	if err != nil || !(price > 0 && price < 1e7) {
		return event{}, errPrice
	}
	size, err := strconv.ParseInt(string(f[3]), 10, 64)
	if err != nil || size <= 0 {
		return event{}, errSize
	}
	ts, err := strconv.ParseInt(string(f[4]), 10, 64)
	if err != nil || ts <= 0 {
		return event{}, errTime
	}
	sym, ok := symbolNames[string(f[1])] // no allocation for a known symbol
	if !ok {
		sym = string(f[1])
	}
	return event{id: string(f[0]), symbol: sym, price: price, size: size, ts: ts}, nil
}

// normalise upper-cases the symbol and fixes the price to ten-thousandths.
func normalise(e event) tick {
	sym := e.symbol
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
	p4 := int64(e.price*1e4 + 0.5)
	return tick{id: e.id, symbol: sym, price4: p4, size: e.size, ts: e.ts, notional: p4 * e.size}
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

// encodeEnriched appends the enriched event's line to buf:
//
//	id,symbol,price4,size,ts,notional,name,sector,currency,lots
func encodeEnriched(buf []byte, t tick, r refData) []byte {
	buf = append(buf, t.id...)
	buf = append(buf, ',')
	buf = append(buf, t.symbol...)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, t.price4, 10)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, t.size, 10)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, t.ts, 10)
	buf = append(buf, ',')
	buf = strconv.AppendInt(buf, t.notional, 10)
	buf = append(buf, ',')
	buf = append(buf, r.name...)
	buf = append(buf, ',')
	buf = append(buf, r.sector...)
	buf = append(buf, ',')
	buf = append(buf, r.currency...)
	buf = append(buf, ',')
	return strconv.AppendInt(buf, (t.size+r.lot-1)/r.lot, 10)
}
