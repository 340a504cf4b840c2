package sluice_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// ltrade is the lab's windows trade (bench/internal/windows): a string
// key and 48 bytes by value.
type ltrade struct {
	id         uint64
	sym        string
	px, qty, t int64
}

type lacc struct{ vol, notional, n int64 }

// BenchmarkWindowCheapVsLoop is the lab's windows experiment with cheap
// items in one process: 1<<20 trades made beforehand over 500 string
// symbols, 100k/s of event time with up to 100 ms of disorder, a
// one-second tumbling VWAP per symbol with OutOfOrder 5 s, through
// Window (n = 1, 2) and a one-goroutine loop over a map of accumulators
// that emits a window once the watermark passes its end, in the same run.
// cpu-ns/item is the process's CPU time per trade: with -cpu 1 it is the
// stage's whole cost (router, worker, the source's sends, the sink).
func BenchmarkWindowCheapVsLoop(b *testing.B) {
	const (
		size = int64(time.Second)
		ooo  = int64(5 * time.Second)
	)
	syms := make([]string, 500)
	for i := range syms {
		syms[i] = "S" + string(rune('0'+i/100)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
	}
	rng := rand.New(rand.NewPCG(38, 38))
	in := make([]ltrade, 1<<20)
	for i := range in {
		at := int64(1_800_000_000)*size + int64(i)*10_000
		in[i] = ltrade{id: uint64(i), sym: syms[rng.IntN(500)], px: 1000 + rng.Int64N(100_000), qty: 1 + rng.Int64N(1000), t: at - rng.Int64N(int64(100*time.Millisecond)+1)}
	}
	type wk struct {
		sym   string
		start int64
	}
	loop := func() (panes int, vol int64) {
		open := map[wk]*lacc{}
		wm, next := int64(-1<<63), int64(-1<<63)
		emit := func(upTo int64) {
			for k, a := range open {
				if k.start+size <= upTo {
					panes++
					vol += a.vol
					delete(open, k)
				}
			}
		}
		for _, t := range in {
			k := wk{t.sym, t.t / size * size}
			a := open[k]
			if a == nil {
				a = new(lacc)
				open[k] = a
			}
			a.vol += t.qty
			a.notional += t.qty * t.px
			a.n++
			if w := t.t - ooo; w > wm {
				wm = w
				if wm >= next {
					emit(wm)
					next = (wm/size + 1) * size
				}
			}
		}
		emit(1<<63 - 1)
		return panes, vol
	}
	wantPanes, wantVol := loop()
	b.Run("impl=loop", func(b *testing.B) {
		cpu0 := cpuNs()
		for b.Loop() {
			if p, v := loop(); p != wantPanes || v != wantVol {
				b.Fatalf("got %d panes of volume %d, want %d of %d", p, v, wantPanes, wantVol)
			}
		}
		perItemCPU(b, len(in), cpu0)
	})
	for _, n := range []int{1, 2} {
		b.Run("impl=window/n="+itoa(n), func(b *testing.B) {
			cpu0 := cpuNs()
			for b.Loop() {
				p := sluice.New(context.Background())
				out := sluice.Window(p, "vwap", sluice.FromSlice(p, "in", in), n, sluice.WindowSpec[ltrade, string, lacc]{
					Windows:    sluice.Tumbling(time.Duration(size)),
					Key:        func(t ltrade) string { return t.sym },
					Time:       func(t ltrade) time.Time { return time.Unix(0, t.t) },
					Fold:       func(a *lacc, t ltrade) { a.vol += t.qty; a.notional += t.qty * t.px; a.n++ },
					OutOfOrder: time.Duration(ooo),
				})
				type tot struct {
					n   int
					vol int64
				}
				got := sluice.Reduce(p, "total", out, tot{}, func(acc tot, pn sluice.Pane[string, lacc]) tot {
					return tot{acc.n + 1, acc.vol + pn.Acc.vol}
				})
				if err := p.Wait(); err != nil {
					b.Fatal(err)
				}
				if g := got.Value(); g.n != wantPanes || g.vol != wantVol {
					b.Fatalf("got %d panes of volume %d, want %d of %d", g.n, g.vol, wantPanes, wantVol)
				}
			}
			perItemCPU(b, len(in), cpu0)
		})
	}
}
