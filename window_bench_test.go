package sluice_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
)

// benchTrades are 1<<20 cheap trades over 500 symbols, one per µs of
// event time with up to 100 µs of disorder: about 1 s of event time, so
// eleven 100 ms windows per symbol.
type btrade struct {
	sym int
	px  float64
	at  int64 // ns
}

func benchTrades() []btrade {
	rng := rand.New(rand.NewPCG(7, 7))
	ts := make([]btrade, 1<<20)
	for i := range ts {
		ts[i] = btrade{sym: rng.IntN(500), px: 100 + rng.Float64(), at: 1_000_000 + int64(i)*1000 - rng.Int64N(100_000)}
	}
	return ts
}

type vwap struct{ pxq, q float64 }

// BenchmarkKeyedVsLoop: a running sum per key through Keyed (n = 1, 2)
// against a one-goroutine loop over a map, in the same run.
func BenchmarkKeyedVsLoop(b *testing.B) {
	in := benchTrades()
	want := 0.0
	{
		m := map[int]float64{}
		for _, t := range in {
			m[t.sym] += t.px
		}
		for _, v := range m {
			want += v
		}
	}
	b.Run("impl=loop", func(b *testing.B) {
		for b.Loop() {
			m := map[int]float64{}
			for _, t := range in {
				m[t.sym] += t.px
			}
			got := 0.0
			for _, v := range m {
				got += v
			}
			if !near(got, want) {
				b.Fatalf("got %v, want %v", got, want)
			}
		}
		perItem(b, len(in))
	})
	for _, n := range []int{1, 2} {
		b.Run("impl=keyed/n="+itoa(n), func(b *testing.B) {
			for b.Loop() {
				p := sluice.New(context.Background())
				out := sluice.Keyed(p, "sum", sluice.FromSlice(p, "in", in), n, sluice.KeyFuncs[btrade, int, float64, float64]{
					Key: func(t btrade) int { return t.sym },
					Item: func(_ context.Context, _ int, s *float64, t btrade, _ func(float64) bool) error {
						*s += t.px
						return nil
					},
					End: func(_ context.Context, _ int, s *float64, _ sluice.KeyEnd, emit func(float64) bool) error {
						emit(*s)
						return nil
					},
				})
				got := sluice.Reduce(p, "total", out, 0.0, func(acc, v float64) float64 { return acc + v })
				if err := p.Wait(); err != nil {
					b.Fatal(err)
				}
				if !near(got.Value(), want) {
					b.Fatalf("got %v, want %v", got.Value(), want)
				}
			}
			perItem(b, len(in))
		})
	}
}

// BenchmarkTumblingVsLoop: a 100 ms tumbling VWAP per symbol by event
// time through Window (n = 1, 2) against a one-goroutine loop over a map
// of accumulators that emits a window once the watermark passes it.
func BenchmarkTumblingVsLoop(b *testing.B) {
	in := benchTrades()
	const size, ooo = int64(100 * time.Millisecond), int64(100 * time.Microsecond)
	type wk struct {
		sym   int
		start int64
	}
	loop := func() (panes int, q float64) {
		open := map[wk]*vwap{}
		wm, next := int64(-1<<63), int64(size)
		emit := func(upTo int64) {
			for k, a := range open {
				if k.start+size <= upTo {
					panes++
					q += a.q
					delete(open, k)
				}
			}
		}
		for _, t := range in {
			k := wk{t.sym, t.at / size * size}
			a := open[k]
			if a == nil {
				a = new(vwap)
				open[k] = a
			}
			a.pxq += t.px
			a.q++
			if w := t.at - ooo; w > wm {
				wm = w
				if wm >= next {
					emit(wm)
					next = (wm/size + 1) * size
				}
			}
		}
		emit(1<<63 - 1)
		return panes, q
	}
	wantPanes, wantQ := loop()
	b.Run("impl=loop", func(b *testing.B) {
		for b.Loop() {
			if p, q := loop(); p != wantPanes || q != wantQ {
				b.Fatalf("got %d panes of %v, want %d of %v", p, q, wantPanes, wantQ)
			}
		}
		perItem(b, len(in))
	})
	for _, n := range []int{1, 2} {
		b.Run("impl=window/n="+itoa(n), func(b *testing.B) {
			for b.Loop() {
				p := sluice.New(context.Background())
				out := sluice.Window(p, "vwap", sluice.FromSlice(p, "in", in), n, sluice.WindowSpec[btrade, int, vwap]{
					Windows:    sluice.Tumbling(time.Duration(size)),
					Key:        func(t btrade) int { return t.sym },
					Time:       func(t btrade) time.Time { return time.Unix(0, t.at) },
					Fold:       func(a *vwap, t btrade) { a.pxq += t.px; a.q++ },
					OutOfOrder: time.Duration(ooo),
				})
				type tot struct {
					n int
					q float64
				}
				got := sluice.Reduce(p, "total", out, tot{}, func(acc tot, pn sluice.Pane[int, vwap]) tot {
					return tot{acc.n + 1, acc.q + pn.Acc.q}
				})
				if err := p.Wait(); err != nil {
					b.Fatal(err)
				}
				if g := got.Value(); g.n != wantPanes || g.q != wantQ {
					b.Fatalf("got %d panes of %v, want %d of %v", g.n, g.q, wantPanes, wantQ)
				}
			}
			perItem(b, len(in))
		})
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-6*b && -d < 1e-6*b }

func itoa(n int) string { return string(rune('0' + n)) }

// BenchmarkWindowEmitLatency: how long after the watermark passes a
// window's end its pane leaves the stage, in real time. A source sends
// 20k trades/s over 500 symbols (a tick of 20 every millisecond, then
// Flush), each stamped with the wall clock less up to 100 ms of disorder;
// Window(Tumbling(1s), OutOfOrder 100 ms), one worker; a sink stamps each
// pane. The source records when it first sent a trade at or past a
// window's end + OutOfOrder (the watermark passing the end); reported:
// pane stamp − that moment (stage-ms, the stage's own delay) and pane
// stamp − (end + OutOfOrder) by the wall clock (wall-ms, which adds the
// disorder of the latest trades), p50 and p99 over every pane. One
// partition and no broker: what a connector's fetching adds is outside.
func BenchmarkWindowEmitLatency(b *testing.B) {
	const (
		rate   = 20_000
		tick   = time.Millisecond
		width  = time.Second
		ooo    = 100 * time.Millisecond
		run    = 3500 * time.Millisecond
		nsyms  = 500
		perTck = rate / int(time.Second/tick)
	)
	type tr struct {
		sym int
		at  int64
	}
	for b.Loop() {
		var passed sync.Map // window end → when the watermark passed it (ns)
		var stageLat, wallLat []float64
		p := sluice.New(context.Background())
		src := sluice.From(p, "trades", func(ctx context.Context, out *sluice.Emitter[tr]) error {
			rng := rand.New(rand.NewPCG(1, 2))
			var top int64
			tk := time.NewTicker(tick)
			defer tk.Stop()
			deadline := time.Now().Add(run)
			for now := range tk.C {
				if now.After(deadline) {
					return nil
				}
				for range perTck {
					t := time.Now().UnixNano()
					v := tr{sym: rng.IntN(nsyms), at: t - rng.Int64N(int64(ooo))}
					if v.at > top {
						// The watermark v.at − ooo passes every end up to it.
						for e := (top-int64(ooo))/int64(width)*int64(width) + int64(width); top != 0 && e <= v.at-int64(ooo); e += int64(width) {
							passed.LoadOrStore(e, t)
						}
						top = v.at
					}
					if !out.Send(v) {
						return ctx.Err()
					}
				}
				if !out.Flush() {
					return ctx.Err()
				}
			}
			return nil
		})
		panes := sluice.Window(p, "bars", src, 1, sluice.WindowSpec[tr, int, int]{
			Windows:    sluice.Tumbling(width),
			Key:        func(v tr) int { return v.sym },
			Time:       func(v tr) time.Time { return time.Unix(0, v.at) },
			Fold:       func(n *int, _ tr) { *n++ },
			OutOfOrder: ooo,
		})
		sluice.ForEach(p, "stamp", panes, 1, func(_ context.Context, pn sluice.Pane[int, int]) error {
			now := time.Now().UnixNano()
			end := pn.End.UnixNano()
			if at, ok := passed.Load(end); ok { // windows closed by the end of the input are not counted
				stageLat = append(stageLat, float64(now-at.(int64))/1e6)
				wallLat = append(wallLat, float64(now-end-int64(ooo))/1e6)
			}
			return nil
		})
		if err := p.Wait(); err != nil {
			b.Fatal(err)
		}
		if len(stageLat) < nsyms {
			b.Fatalf("%d panes timed, want ≥ %d", len(stageLat), nsyms)
		}
		slices.Sort(stageLat)
		slices.Sort(wallLat)
		q := func(xs []float64, f float64) float64 { return xs[min(len(xs)-1, int(f*float64(len(xs))))] }
		b.ReportMetric(q(stageLat, 0.5), "stage-ms-p50")
		b.ReportMetric(q(stageLat, 0.99), "stage-ms-p99")
		b.ReportMetric(q(wallLat, 0.5), "wall-ms-p50")
		b.ReportMetric(q(wallLat, 0.99), "wall-ms-p99")
	}
}
