// Package windows is what the lab's windows experiment shares between its
// programs (bench/windows) and the lab: the synthetic trades, their JSON
// lines, the per-symbol one-second VWAP windows, the watermark rule, the
// plain-loop answer and the digest every program prints. It imports the
// standard library only.
package windows

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"time"
)

// Trade is one synthetic trade. Prices are in cents, so that every sum is
// exact and every program's answer identical whatever order it folds in.
type Trade struct {
	ID    uint64 `json:"id"`
	Sym   string `json:"sym"`
	Price int64  `json:"px"`
	Qty   int64  `json:"qty"`
	TS    int64  `json:"ts"` // event time, unix nanoseconds
}

// The trades: Symbols symbols, Rate trades per second of event time,
// each lagging its place in the sequence by a uniform [0, Disorder].
const (
	Symbols  = 500
	Rate     = 100_000
	Disorder = 100 * time.Millisecond
	// OutOfOrderness is the watermark's bound: the trades' disorder plus
	// what the parallel programs reorder on the way, so that no program
	// finds a trade late. A program that folds under a mutex reorders as
	// far as a worker holding a trade is descheduled — at millions of
	// cheap trades a second, a few milliseconds are a second of event
	// time — hence the wide bound; it costs 6 open windows per symbol.
	OutOfOrderness = 5 * time.Second
	// Width is the windows' length: tumbling, by event time.
	Width = time.Second
	start = int64(1_800_000_000) * int64(time.Second)
)

var symNames = func() []string {
	s := make([]string, Symbols)
	for i := range s {
		s[i] = fmt.Sprintf("S%03d", i)
	}
	return s
}()

// Gen makes the trades in order, the same for every seed-less run.
type Gen struct {
	rng *rand.Rand
	i   uint64
}

// NewGen returns a generator at the first trade.
func NewGen() *Gen { return &Gen{rng: rand.New(rand.NewPCG(38, 38))} }

// Next returns the next trade.
func (g *Gen) Next() Trade {
	i := g.i
	g.i++
	at := start + int64(i)*int64(time.Second/Rate)
	return Trade{ID: i, Sym: symNames[g.rng.IntN(Symbols)], Price: 1000 + g.rng.Int64N(100_000),
		Qty: 1 + g.rng.Int64N(1000), TS: at - g.rng.Int64N(int64(Disorder)+1)}
}

// AppendJSON appends t's JSON line (with its newline) to buf, as
// encoding/json would write it.
func AppendJSON(buf []byte, t Trade) []byte {
	buf = append(buf, `{"id":`...)
	buf = strconv.AppendUint(buf, t.ID, 10)
	buf = append(buf, `,"sym":"`...)
	buf = append(buf, t.Sym...)
	buf = append(buf, `","px":`...)
	buf = strconv.AppendInt(buf, t.Price, 10)
	buf = append(buf, `,"qty":`...)
	buf = strconv.AppendInt(buf, t.Qty, 10)
	buf = append(buf, `,"ts":`...)
	buf = strconv.AppendInt(buf, t.TS, 10)
	return append(buf, "}\n"...)
}

// Decode reads one JSON line with encoding/json, as a program that reads
// JSON lines would.
func Decode(line []byte) (Trade, error) {
	var t Trade
	err := json.Unmarshal(line, &t)
	return t, err
}

// WriteFile writes the first n trades' JSON lines to path.
func WriteFile(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	g := NewGen()
	var buf []byte
	for range n {
		buf = AppendJSON(buf[:0], g.Next())
		if _, err := w.Write(buf); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Lines calls f with each line of r, without its newline; the slice is
// valid until f returns.
func Lines(r io.Reader, f func(line []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if ferr := f(trimNewline(line)); ferr != nil {
				return ferr
			}
		}
		switch {
		case err == io.EOF:
			return nil
		case err == bufio.ErrBufferFull:
			return fmt.Errorf("a line longer than 64 KiB")
		case err != nil:
			return err
		}
	}
}

// trimNewline drops a trailing newline.
func trimNewline(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		return line[:n-1]
	}
	return line
}

// Blocks reads r in blocks of about size bytes, each cut after its last
// newline (a line longer than size makes a longer block), and calls send
// with each, a new slice each time; it stops early when send returns
// false.
func Blocks(r io.Reader, size int, send func(block []byte) bool) error {
	var carry []byte
	for {
		b := make([]byte, len(carry), max(size, 2*len(carry)))
		copy(b, carry)
		n, err := io.ReadFull(r, b[len(carry):cap(b)])
		b = b[:len(carry)+n]
		end := bytes.LastIndexByte(b, '\n') + 1
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			end = len(b)
		}
		carry = append(carry[:0], b[end:]...)
		if end > 0 && !send(b[:end:end]) {
			return nil
		}
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return nil
		case err != nil:
			return err
		}
	}
}
