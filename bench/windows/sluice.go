package main

import (
	"bytes"
	"context"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/bench/internal/windows"
)

// The sluice program: a source reads the lines (carved out of 64 KiB
// slabs, not allocated one by one), a pool of 2 decodes them in input
// order (OrderedMap: the watermark then sees the file's own disorder and
// nothing more), a Window stage folds them into per-symbol one-second
// windows and a sink collects the panes. For cheap items the source makes
// the trades and hands them straight to the Window stage.
const (
	blockSize = 64 << 10
	decoders  = 2
)

func runSluice(src source) (windows.Result, error) {
	p := sluice.New(context.Background(), sluice.Named("windows"))
	var trades sluice.Stream[windows.Trade]
	if src.file == nil {
		trades = sluice.From(p, "generate", func(ctx context.Context, out *sluice.Emitter[windows.Trade]) error {
			g := windows.NewGen()
			for range src.n {
				if !out.Send(g.Next()) {
					return ctx.Err()
				}
			}
			return nil
		})
	} else {
		blocks := sluice.From(p, "read", func(ctx context.Context, out *sluice.Emitter[[]byte]) error {
			return windows.Blocks(src.file, blockSize, func(b []byte) bool { return out.Send(b) })
		})
		decoded := sluice.OrderedMap(p, "decode", blocks, decoders, func(_ context.Context, b []byte) ([]windows.Trade, error) {
			ts := make([]windows.Trade, 0, len(b)/64)
			for len(b) > 0 {
				i := bytes.IndexByte(b, '\n')
				line := b
				if i >= 0 {
					line, b = b[:i], b[i+1:]
				} else {
					b = nil
				}
				t, err := windows.Decode(line)
				if err != nil {
					return nil, err
				}
				ts = append(ts, t)
			}
			return ts, nil
		})
		trades = sluice.Unbatch(p, "trades", decoded)
	}
	var late sluice.Stream[sluice.Late[windows.Trade]]
	panes := sluice.Window(p, "vwap", trades, 1, sluice.WindowSpec[windows.Trade, string, windows.Acc]{
		Windows:    sluice.Tumbling(windows.Width),
		Key:        func(t windows.Trade) string { return t.Sym },
		Time:       func(t windows.Trade) time.Time { return time.Unix(0, t.TS) },
		Fold:       func(a *windows.Acc, t windows.Trade) { a.Add(t) },
		OutOfOrder: windows.OutOfOrderness,
		Late:       &late,
	})
	var res windows.Result
	sluice.ForEach(p, "collect", panes, 1, func(_ context.Context, pn sluice.Pane[string, windows.Acc]) error {
		res.Emit(windows.Key{Sym: pn.Key, Start: pn.Start.UnixNano()}, pn.Acc)
		return nil
	})
	var nLate int64
	sluice.ForEach(p, "late", late, 1, func(context.Context, sluice.Late[windows.Trade]) error {
		nLate++
		return nil
	})
	err := p.Wait()
	res.Late = nLate
	return res, err
}
