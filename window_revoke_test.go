package sluice_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// revLedger is a movingSettler that records, per partition, the
// messages acknowledged and failed.
type revLedger struct {
	movingSettler
	mu          sync.Mutex
	acks, fails map[uint64]int
}

func newRevLedger(parts ...uint64) *revLedger {
	l := &revLedger{acks: map[uint64]int{}, fails: map[uint64]int{}}
	l.list(parts...)
	return l
}

func (l *revLedger) Settle(key uint64, cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cause == nil {
		l.acks[key>>32]++
	} else {
		l.fails[key>>32]++
	}
}

func (l *revLedger) settled(part uint64) (acks, fails int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acks[part], l.fails[part]
}

// send sends partition part's items at event times from, from+step, …
// before to, in one chunk, seq numbers from seq on; it returns the next
// seq.
func (l *revLedger) send(e *sluice.Emitter[mev], part, seq uint64, from, to, step time.Duration) uint64 {
	for at := from; at < to; at += step {
		e.Send(mev{sluice.NewReceipt(l, part<<32|seq), t0.Add(at), part})
		seq++
	}
	e.Flush()
	return seq
}

// Items of a partition taken away that reach the stage after it learnt
// of the revoke are dropped, counted in RevokedItems, and their receipts
// are neither acknowledged nor failed: the partition's new reader
// processes them again. The window they fed is discarded (Revoked).
func TestWindowItemsOfARevokedPartitionAreCountedNotSettled(t *testing.T) {
	for n := 1; n <= 3; n++ {
		synctest.Test(t, func(t *testing.T) {
			l := newRevLedger(0, 1)
			got, ws := partWindow(t, &l.movingSettler, n, sluice.WindowSpec[mev, uint64, int]{
				Key:        func(e mev) uint64 { return e.part },
				OutOfOrder: 10 * time.Millisecond,
			}, func(p *sluice.Pipeline, e *sluice.Emitter[mev]) {
				s0 := l.send(e, 0, 0, 0, 500*time.Millisecond, 10*time.Millisecond)
				s1 := l.send(e, 1, 0, 0, 500*time.Millisecond, 10*time.Millisecond)
				synctest.Wait()
				l.revoke(1)
				s0 = l.send(e, 0, s0, 500*time.Millisecond, 600*time.Millisecond, 10*time.Millisecond) // the stage learns of the revoke
				synctest.Wait()
				l.send(e, 1, s1, 500*time.Millisecond, 700*time.Millisecond, 10*time.Millisecond) // on their way at the revoke
				l.send(e, 0, s0, 600*time.Millisecond, 2500*time.Millisecond, 10*time.Millisecond)
			})
			for _, pn := range got {
				if pn.Key != 0 {
					t.Fatalf("n=%d: a pane of the revoked partition was emitted: %+v", n, pn)
				}
			}
			if ws.RevokedItems != 20 || ws.Revoked != 1 || ws.Held != 0 || ws.Open != 0 {
				t.Fatalf("n=%d: stats %+v; want 20 items dropped for the revoke, 1 window revoked, nothing held", n, ws)
			}
			if a, f := l.settled(1); a != 0 || f != 0 {
				t.Fatalf("n=%d: %d of the revoked partition's messages acknowledged and %d failed, want none settled", n, a, f)
			}
			if a, f := l.settled(0); a != 250 || f != 0 {
				t.Fatalf("n=%d: partition 0: %d acknowledged, %d failed; want 250, 0", n, a, f)
			}
		})
	}
}

// Processing-time windows honour a revoke as event-time ones do: a window
// fed only by partitions taken away is discarded, unemitted, its receipts
// left unsettled (the new reader folds those messages into its own
// windows, by its own clock: counted once, not twice), and the items of
// those partitions that arrive later are dropped and counted. The windows
// of the partition kept close by the clock as usual, and nothing stays
// held.
func TestWindowProcessingTimeHonoursARevoke(t *testing.T) {
	for n := 1; n <= 3; n++ {
		synctest.Test(t, func(t *testing.T) {
			l := newRevLedger(0, 1)
			p := sluice.New(context.Background())
			var during sluice.WindowStats
			src := sluice.From(p, "in", func(ctx context.Context, e *sluice.Emitter[mev]) error {
				var seq [2]uint64
				for i := range 25 { // 2.5 s, an item of each partition every 100 ms
					if i == 5 {
						synctest.Wait()
						during = *statsOf(p, "w").Window
						l.revoke(1)
					}
					for part := range uint64(2) {
						e.Send(mev{sluice.NewReceipt(l, part<<32|seq[part]), time.Time{}, part})
						seq[part]++
					}
					e.Flush()
					time.Sleep(100 * time.Millisecond)
				}
				return nil
			})
			spec := sluice.WindowSpec[mev, uint64, int]{
				Windows: sluice.Tumbling(time.Second),
				Key:     func(e mev) uint64 { return e.part },
				Fold:    func(c *int, _ mev) { *c++ },
			}
			var mu sync.Mutex
			var got []ppane
			sluice.ForEach(p, "store", sluice.Window(p, "w", src, n, spec), 1, func(_ context.Context, pn ppane) error {
				mu.Lock()
				got = append(got, pn)
				mu.Unlock()
				return nil
			})
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			ws := *statsOf(p, "w").Window
			if during.Held != 10 {
				t.Fatalf("n=%d: %d receipts held before the revoke, want 10", n, during.Held)
			}
			items := 0
			for _, pn := range got {
				if pn.Key != 0 {
					t.Fatalf("n=%d: a pane of the revoked partition was emitted: %+v", n, pn)
				}
				items += pn.Items
			}
			if items != 25 || ws.Revoked != 1 || ws.RevokedItems != 20 || ws.Held != 0 || ws.Open != 0 {
				t.Fatalf("n=%d: %d items in panes %v, stats %+v; want 25 items of partition 0, 1 window revoked, 20 items dropped, nothing held", n, items, got, ws)
			}
			if a, f := l.settled(1); a != 0 || f != 0 {
				t.Fatalf("n=%d: %d of the revoked partition's messages acknowledged and %d failed, want none settled", n, a, f)
			}
			if a, f := l.settled(0); a != 25 || f != 0 {
				t.Fatalf("n=%d: partition 0: %d acknowledged, %d failed; want 25, 0", n, a, f)
			}
			if r := l.registered(); r != 0 {
				t.Fatalf("n=%d: %d revoke callbacks still registered after Wait", n, r)
			}
		})
	}
}
