package sluice_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// movingSettler is a partSettler whose partitions change while it runs:
// it lists them (PartitionLister) and tells of those taken away
// (Revoker).
type movingSettler struct {
	partSettler
	mu     sync.Mutex
	listed []uint64
	onRev  []func([]uint64)
}

func (s *movingSettler) Partitions() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint64(nil), s.listed...)
}

func (s *movingSettler) msg(part, seq uint64) sluice.Receipt {
	return sluice.NewReceipt(s, part<<32|seq)
}

func (s *movingSettler) list(ids ...uint64) {
	s.mu.Lock()
	s.listed = ids
	s.mu.Unlock()
}

func (s *movingSettler) OnRevoke(f func([]uint64)) func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onRev = append(s.onRev, f)
	i := len(s.onRev) - 1
	return func() {
		s.mu.Lock()
		s.onRev[i] = nil
		s.mu.Unlock()
	}
}

// revoke takes partitions ids away, as a rebalance does.
func (s *movingSettler) revoke(ids ...uint64) {
	s.mu.Lock()
	fs := append([]func([]uint64){}, s.onRev...)
	keep := s.listed[:0]
	for _, id := range s.listed {
		gone := false
		for _, g := range ids {
			gone = gone || g == id
		}
		if !gone {
			keep = append(keep, id)
		}
	}
	s.listed = keep
	s.mu.Unlock()
	for _, f := range fs {
		if f != nil {
			f(ids)
		}
	}
}

func (s *movingSettler) registered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.onRev {
		if f != nil {
			n++
		}
	}
	return n
}

type ppane = sluice.Pane[uint64, int]

// mev is an event of partition part.
type mev struct {
	sluice.Receipt
	at   time.Time
	part uint64
}

// partWindow runs a one-second tumbling count per partition (the key is
// the partition) over what feed sends, and returns the panes.
func partWindow(t *testing.T, s *movingSettler, n int, spec sluice.WindowSpec[mev, uint64, int],
	feed func(p *sluice.Pipeline, e *sluice.Emitter[mev])) ([]ppane, sluice.WindowStats) {
	t.Helper()
	p := sluice.New(context.Background())
	src := sluice.From(p, "in", func(ctx context.Context, e *sluice.Emitter[mev]) error {
		feed(p, e)
		return nil
	})
	spec.Windows = sluice.Tumbling(time.Second)
	spec.Time = func(e mev) time.Time { return e.at }
	spec.Fold = func(c *int, _ mev) { *c++ }
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
	return got, *statsOf(p, "w").Window
}

// sendRange sends partition part's items at event times from, from+step,
// … before to, seq numbers from seq on; it returns the next seq.
func sendRange(e *sluice.Emitter[mev], s *movingSettler, part, seq uint64, from, to, step time.Duration) uint64 {
	for at := from; at < to; at += step {
		e.Send(mev{s.msg(part, seq), t0.Add(at), part})
		seq++
	}
	e.Flush()
	return seq
}

// A partition taken away (Revoker) has its windows discarded, not
// emitted: its new reader computes them from its redelivered records. The
// windows of the partition kept are emitted; an item of the partition
// taken away that arrives later is dropped; nothing of it is settled.
func TestWindowRevokedPartitionsWindowsAreNotEmitted(t *testing.T) {
	for n := 1; n <= 3; n++ {
		synctest.Test(t, func(t *testing.T) {
			s := &movingSettler{}
			s.list(0, 1)
			var heldBefore int64
			got, ws := partWindow(t, s, n, sluice.WindowSpec[mev, uint64, int]{
				Key:        func(e mev) uint64 { return e.part },
				OutOfOrder: 10 * time.Millisecond,
			}, func(p *sluice.Pipeline, e *sluice.Emitter[mev]) {
				s0 := sendRange(e, s, 0, 0, 0, 500*time.Millisecond, 10*time.Millisecond)
				s1 := sendRange(e, s, 1, 0, 0, 500*time.Millisecond, 10*time.Millisecond)
				synctest.Wait()
				heldBefore = statsOf(p, "w").Window.Held
				s.revoke(1)
				sendRange(e, s, 1, s1, 500*time.Millisecond, 600*time.Millisecond, 10*time.Millisecond) // in flight at the revoke
				sendRange(e, s, 0, s0, 500*time.Millisecond, 2500*time.Millisecond, 10*time.Millisecond)
			})
			if heldBefore != 100 {
				t.Fatalf("n=%d: %d receipts held before the revoke, want 100", n, heldBefore)
			}
			for _, pn := range got {
				if pn.Key != 0 {
					t.Fatalf("n=%d: a pane of the revoked partition was emitted: %+v", n, pn)
				}
			}
			if len(got) != 3 || got[0].Items+got[1].Items+got[2].Items != 250 {
				t.Fatalf("n=%d: panes %+v, want 3 of partition 0 with 250 items", n, got)
			}
			if ws.Revoked != 1 || ws.Held != 0 || ws.Open != 0 || s.acked.Load() != 250 {
				t.Fatalf("n=%d: stats %+v, acked %d; want 1 window revoked, nothing held, 250 acked", n, ws, s.acked.Load())
			}
			if r := s.registered(); r != 0 {
				t.Fatalf("n=%d: %d revoke callbacks still registered after Wait", n, r)
			}
		})
	}
}

// A window fed by a partition taken away and one kept (no key) is
// emitted, whole: the rule for windows fed by several partitions.
func TestWindowFedByAKeptPartitionIsEmittedAfterARevoke(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &movingSettler{}
		s.list(0, 1)
		got, ws := partWindow(t, s, 2, sluice.WindowSpec[mev, uint64, int]{OutOfOrder: 10 * time.Millisecond},
			func(p *sluice.Pipeline, e *sluice.Emitter[mev]) {
				s0 := sendRange(e, s, 0, 0, 0, 500*time.Millisecond, 10*time.Millisecond)
				sendRange(e, s, 1, 0, 0, 500*time.Millisecond, 10*time.Millisecond)
				synctest.Wait()
				s.revoke(1)
				sendRange(e, s, 0, s0, 500*time.Millisecond, 1500*time.Millisecond, 10*time.Millisecond)
			})
		if len(got) != 2 || got[0].Items != 150 || ws.Revoked != 0 {
			t.Fatalf("panes %+v, stats %+v; want the first window with 150 items, none revoked", got, ws)
		}
	})
}

// A partition that joins behind the others — a backlog taken over from a
// member that left — is judged against its own watermark: none of its
// items is late, its windows are emitted once each, complete, and the
// watermark waits for it while it catches up.
func TestWindowLatenessIsJudgedPerPartition(t *testing.T) {
	for n := 1; n <= 3; n++ {
		synctest.Test(t, func(t *testing.T) {
			s := &movingSettler{}
			s.list(0)
			got, ws := partWindow(t, s, n, sluice.WindowSpec[mev, uint64, int]{
				Key:        func(e mev) uint64 { return e.part },
				OutOfOrder: 100 * time.Millisecond,
			}, func(p *sluice.Pipeline, e *sluice.Emitter[mev]) {
				s0 := sendRange(e, s, 0, 0, 0, 10*time.Second, 100*time.Millisecond)
				synctest.Wait()
				s.list(0, 1) // partition 1 is assigned, with its backlog
				time.Sleep(time.Second)
				s1 := sendRange(e, s, 1, 0, 2*time.Second, 8*time.Second, 100*time.Millisecond)
				sendRange(e, s, 0, s0, 10*time.Second, 12*time.Second, 100*time.Millisecond)
				sendRange(e, s, 1, s1, 8*time.Second, 12*time.Second, 100*time.Millisecond)
			})
			if ws.Late+ws.LateDropped != 0 {
				t.Fatalf("n=%d: %d items late; a partition's backlog must be judged against its own watermark", n, ws.Late+ws.LateDropped)
			}
			seen := map[[2]int64]bool{}
			for _, pn := range got {
				k := [2]int64{int64(pn.Key), pn.Start.Sub(t0).Milliseconds() / 1000}
				if seen[k] || pn.Revision != 0 || pn.Items != 10 {
					t.Fatalf("n=%d: pane %v: %d items, revision %d, again %v; want each window once, 10 items, revision 0", n, k, pn.Items, pn.Revision, seen[k])
				}
				seen[k] = true
			}
			if len(got) != 12+10 || s.acked.Load() != 120+100 {
				t.Fatalf("n=%d: %d panes, %d acked; want 22, 220", n, len(got), s.acked.Load())
			}
		})
	}
}

// At the start, a partition listed but silent holds the watermark back
// for Idle from the moment the stage learns of it, not from when the
// pipeline was built: the first windows close Idle after the first item,
// even when that item comes long after the start.
func TestWindowStartupStallIsBoundedByIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &movingSettler{}
		s.list(0, 1, 2)
		var first atomic.Int64
		var start, sent time.Time
		p := sluice.New(context.Background())
		start = time.Now()
		src := sluice.From(p, "in", func(ctx context.Context, e *sluice.Emitter[mev]) error {
			time.Sleep(5 * time.Second) // joining the group takes a while
			sent = time.Now()
			sendRange(e, s, 0, 0, 0, 5*time.Second, 100*time.Millisecond)
			time.Sleep(3 * time.Second)
			return nil
		})
		spec := sluice.WindowSpec[mev, struct{}, int]{
			Windows:    sluice.Tumbling(time.Second),
			Time:       func(e mev) time.Time { return e.at },
			Fold:       func(c *int, _ mev) { *c++ },
			OutOfOrder: 50 * time.Millisecond,
			Idle:       time.Second,
		}
		sluice.ForEach(p, "store", sluice.Window(p, "w", src, 2, spec), 1, func(context.Context, sluice.Pane[struct{}, int]) error {
			first.CompareAndSwap(0, int64(time.Since(start)))
			return nil
		})
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		at := time.Duration(first.Load())
		if want := sent.Sub(start) + time.Second; at < want || at > want+200*time.Millisecond {
			t.Fatalf("first window emitted %v after the start, want %v (first item + Idle)", at, want)
		}
	})
}

// When every partition is idle, the watermark is the largest of theirs:
// it does not follow the wall clock, so the window that holds the newest
// event stays open until an item moves it on, or the input ends.
func TestWindowAllPartitionsIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &movingSettler{}
		s.list(0, 1)
		var emitted atomic.Int64
		var during int64
		var st sluice.WindowStats
		p := sluice.New(context.Background())
		src := sluice.From(p, "in", func(ctx context.Context, e *sluice.Emitter[mev]) error {
			sendRange(e, s, 0, 0, 0, 2500*time.Millisecond, 100*time.Millisecond)
			sendRange(e, s, 1, 0, 0, 1500*time.Millisecond, 100*time.Millisecond)
			time.Sleep(10 * time.Second)
			synctest.Wait()
			during, st = emitted.Load(), *statsOf(p, "w").Window
			return nil
		})
		spec := sluice.WindowSpec[mev, struct{}, int]{
			Windows:    sluice.Tumbling(time.Second),
			Time:       func(e mev) time.Time { return e.at },
			Fold:       func(c *int, _ mev) { *c++ },
			OutOfOrder: 50 * time.Millisecond,
			Idle:       time.Second,
		}
		sluice.ForEach(p, "store", sluice.Window(p, "w", src, 2, spec), 1, func(context.Context, sluice.Pane[struct{}, int]) error {
			emitted.Add(1)
			return nil
		})
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		if during != 2 || st.IdlePartitions != 2 || !st.Watermark.Equal(t0.Add(2400*time.Millisecond-50*time.Millisecond)) || st.Open != 1 {
			t.Fatalf("every partition idle: %d windows emitted, stats %+v; want 2, both idle, watermark at the newest event − OutOfOrder, 1 open", during, st)
		}
		if emitted.Load() != 3 {
			t.Fatalf("%d windows at the end of the input, want 3", emitted.Load())
		}
	})
}

// A partition running ahead of the others is judged no more strictly
// than the stage's watermark: its item far behind its own newest, whose
// window is still open because the other partition holds the watermark
// back, goes into that window, not to the late count.
func TestWindowAPartitionAheadIsNotJudgedMoreStrictly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &movingSettler{}
		s.list(0, 1)
		got, ws := partWindow(t, s, 2, sluice.WindowSpec[mev, uint64, int]{
			Key:        func(e mev) uint64 { return e.part },
			OutOfOrder: 100 * time.Millisecond,
		}, func(p *sluice.Pipeline, e *sluice.Emitter[mev]) {
			sendRange(e, s, 1, 0, 0, time.Second, 100*time.Millisecond)                       // partition 1 at 0.9 s
			s0 := sendRange(e, s, 0, 0, 0, 5*time.Second, 100*time.Millisecond)               // partition 0 runs ahead to 4.9 s
			sendRange(e, s, 0, s0, 2500*time.Millisecond, 2600*time.Millisecond, time.Second) // 2.4 s behind its newest
		})
		if ws.Late+ws.LateDropped != 0 {
			t.Fatalf("%d items late; the window at 2 s was still open", ws.Late+ws.LateDropped)
		}
		for _, pn := range got {
			if pn.Key == 0 && pn.Start.Equal(t0.Add(2*time.Second)) && pn.Items != 11 {
				t.Fatalf("window [2 s, 3 s) of partition 0 has %d items, want 11", pn.Items)
			}
		}
	})
}

// Before the stage has a watermark (a listed partition has neither spoken
// nor idled yet) an item far behind its own partition's watermark is
// late all the same: the stage's missing watermark is no licence to fold
// it (a member that starts, or starts again after a kill, read such items
// into windows the plain loop calls late).
func TestWindowAnItemFarBehindItsPartitionIsLateBeforeTheStageHasAWatermark(t *testing.T) {
	for n := 1; n <= 3; n++ {
		synctest.Test(t, func(t *testing.T) {
			s := &movingSettler{}
			s.list(0, 1) // partition 1 stays silent: no stage watermark for Idle
			got, ws := partWindow(t, s, n, sluice.WindowSpec[mev, uint64, int]{
				Key:        func(e mev) uint64 { return e.part },
				OutOfOrder: 100 * time.Millisecond,
				Idle:       time.Hour,
			}, func(p *sluice.Pipeline, e *sluice.Emitter[mev]) {
				seq := sendRange(e, s, 0, 0, 5*time.Second, 10*time.Second, 100*time.Millisecond)
				sendRange(e, s, 0, seq, 0, 100*time.Millisecond, 100*time.Millisecond) // 10 s behind
			})
			if ws.Late+ws.LateDropped != 1 {
				t.Fatalf("n=%d: %d items late, panes %v; want the one 10 s behind its partition", n, ws.Late+ws.LateDropped, got)
			}
			for _, pn := range got {
				if pn.Start.Before(t0.Add(5 * time.Second)) {
					t.Fatalf("n=%d: pane %v holds the late item", n, pn)
				}
			}
		})
	}
}
