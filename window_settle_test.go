package sluice_test

// A Window stage settles an input once every window it went into is
// stored, and leaves open windows unsettled on a Drain.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// windowLedger counts settlements per message and checks each is settled
// only after every pane holding it was stored.
type windowLedger struct {
	mu      sync.Mutex
	stored  map[uint64]int
	want    map[uint64]int
	settled map[uint64]int
	errs    []string
}

func (l *windowLedger) Settle(key uint64, cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.settled[key]++
	if cause != nil || l.stored[key] != l.want[key] {
		l.errs = append(l.errs, fmt.Sprintf("message %d settled (%v) with %d of %d panes stored", key, cause, l.stored[key], l.want[key]))
	}
}

type rtrade struct {
	sluice.Receipt
	trade
	id uint64
}

type rsum struct {
	tsum
	ids []uint64
}

// An input is settled once, after every window it went into is stored:
// hopping windows hold an item in several panes.
func TestWindowSettlesInputsAfterEveryPaneIsStored(t *testing.T) {
	for _, n := range []int{1, 3} {
		func() {
			rng := rand.New(rand.NewPCG(4, uint64(time.Now().UnixNano())))
			base := trades(rng, 5000, 20, 50*time.Millisecond)
			l := &windowLedger{stored: map[uint64]int{}, want: map[uint64]int{}, settled: map[uint64]int{}}
			in := make([]rtrade, len(base))
			for i, x := range base {
				in[i] = rtrade{sluice.NewReceipt(l, uint64(i)), x, uint64(i)}
				l.want[uint64(i)] = 4 // 1 s windows every 250 ms
			}
			p := sluice.New(context.Background())
			spec := sluice.WindowSpec[rtrade, string, rsum]{
				Windows:    sluice.Hopping(time.Second, 250*time.Millisecond),
				Key:        func(x rtrade) string { return x.sym },
				Time:       func(x rtrade) time.Time { return x.at },
				Fold:       func(a *rsum, x rtrade) { a.n++; a.sum += x.px; a.ids = append(a.ids, x.id) },
				OutOfOrder: 50 * time.Millisecond,
			}
			out := sluice.Window(p, "win", sluice.FromSlice(p, "in", in), n, spec)
			sluice.ForEach(p, "store", out, 2, func(_ context.Context, pn sluice.Pane[string, rsum]) error {
				l.mu.Lock()
				for _, id := range pn.Acc.ids {
					l.stored[id]++
				}
				l.mu.Unlock()
				return nil
			})
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			if len(l.errs) > 0 {
				t.Fatalf("n=%d: %d bad settlements, first: %s", n, len(l.errs), l.errs[0])
			}
			for i := range in {
				if c := l.settled[uint64(i)]; c != 1 {
					t.Fatalf("n=%d: message %d settled %d times", n, i, c)
				}
			}
		}()
	}
}

// A Drain leaves open windows unemitted and their inputs unsettled.
func TestWindowDrainLeavesOpenWindowsUnsettled(t *testing.T) {
	for _, n := range []int{1, 2} {
		synctest.Test(t, func(t *testing.T) {
			l := &windowLedger{stored: map[uint64]int{}, want: map[uint64]int{}, settled: map[uint64]int{}}
			p := sluice.New(context.Background())
			src := sluice.From(p, "in", func(ctx context.Context, e *sluice.Emitter[rtrade]) error {
				for i := range 3000 { // 3 s of event time
					l.mu.Lock()
					l.want[uint64(i)] = 1
					l.mu.Unlock()
					if !e.Send(rtrade{sluice.NewReceipt(l, uint64(i)), trade{"a", 1, t0.Add(time.Duration(i) * time.Millisecond)}, uint64(i)}) {
						return nil
					}
				}
				e.Flush()
				time.Sleep(time.Second)
				p.Drain()
				<-e.Done()
				return nil
			})
			spec := sluice.WindowSpec[rtrade, string, rsum]{
				Windows: sluice.Tumbling(time.Second),
				Time:    func(x rtrade) time.Time { return x.at },
				Fold:    func(a *rsum, x rtrade) { a.n++; a.ids = append(a.ids, x.id) },
			}
			var panes int
			sluice.ForEach(p, "store", sluice.Window(p, "win", src, n, spec), 1, func(_ context.Context, pn sluice.Pane[string, rsum]) error {
				l.mu.Lock()
				for _, id := range pn.Acc.ids {
					l.stored[id]++
				}
				panes++
				l.mu.Unlock()
				return nil
			})
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			// Watermark 2999 ms: windows [0,1) and [1,2) emitted; [2,3) open.
			if panes != 2 || len(l.settled) != 2000 || len(l.errs) > 0 {
				t.Fatalf("n=%d: %d panes, %d settled (%v); want 2 panes, 2000 settled", n, panes, len(l.settled), l.errs)
			}
		})
	}
}
