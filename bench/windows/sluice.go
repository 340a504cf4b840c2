package main

import (
	"bytes"
	"context"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/bench/internal/windows"
)

// The sluice program, as docs/windows.md advises: a source reads the
// lines in 16 KiB blocks (not allocated one by one), a FlatMap of 2
// decodes them in parallel and hands on each trade, a Window stage folds
// them into per-symbol one-second windows (its fold is cheap: the decode,
// the bulk of the work, is done before it) and a sink collects the panes.
// The decoders interleave their blocks, a few milliseconds of event time
// each, well within OutOfOrderness. For cheap items the source makes the
// trades and hands them straight to the Window stage.
const (
	blockSize = 16 << 10
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
		trades = sluice.FlatMap(p, "decode", blocks, decoders, func(_ context.Context, b []byte, emit func(windows.Trade) bool) error {
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
					return err
				}
				if !emit(t) {
					return nil
				}
			}
			return nil
		})
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
