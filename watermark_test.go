package sluice_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// partSettler is a source of two or more partitions: a receipt key's
// high 32 bits are its partition. It acknowledges into a counter.
type partSettler struct {
	parts []uint64
	acked atomic.Int64
}

func (s *partSettler) Settle(_ uint64, cause error) {
	if cause == nil {
		s.acked.Add(1)
	}
}
func (s *partSettler) PartitionOf(key uint64) uint64       { return key >> 32 }
func (s *partSettler) PartitionName(id uint64) string      { return fmt.Sprintf("p%d", id) }
func (s *partSettler) Partitions() []uint64                { return s.parts }
func (s *partSettler) msg(part, seq uint64) sluice.Receipt { return sluice.NewReceipt(s, part<<32|seq) }

type pev struct {
	sluice.Receipt
	at time.Time
}

// The watermark is the least of the partitions': partition 0 read to its
// end first makes none of partition 1's items late, since partition 1 —
// listed, not yet heard from — holds the watermark back.
func TestWindowWatermarkIsTheLeastOfThePartitions(t *testing.T) {
	for n := 1; n <= 4; n++ {
		s := &partSettler{parts: []uint64{0, 1}}
		var in []pev
		for part := range uint64(2) {
			for i := range uint64(5000) {
				in = append(in, pev{s.msg(part, i), t0.Add(time.Duration(i) * time.Millisecond)})
			}
		}
		p := sluice.New(context.Background())
		spec := sluice.WindowSpec[pev, struct{}, int]{
			Windows: sluice.Tumbling(time.Second),
			Time:    func(e pev) time.Time { return e.at },
			Fold:    func(c *int, _ pev) { *c++ },
		}
		var counts []int
		sluice.ForEach(p, "store", sluice.Window(p, "w", sluice.FromSlice(p, "in", in), n, spec), 1,
			func(_ context.Context, pn sluice.Pane[struct{}, int]) error {
				counts = append(counts, pn.Acc)
				return nil
			})
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		ws := statsOf(p, "w").Window
		if len(counts) != 5 || ws.LateDropped != 0 || ws.Partitions != 2 || s.acked.Load() != int64(len(in)) {
			t.Fatalf("n=%d: panes %v, stats %+v, acked %d", n, counts, ws, s.acked.Load())
		}
		for _, c := range counts {
			if c != 2000 {
				t.Fatalf("n=%d: panes %v, want 5 of 2000", n, counts)
			}
		}
	}
}

// A partition silent for Idle stops holding the watermark back: windows
// close while it says nothing; it rejoins when it speaks.
func TestWindowIdlePartitionIsSetAside(t *testing.T) {
	for _, tc := range []struct {
		idle time.Duration
		n    int
	}{{0, 1}, {0, 2}, {time.Second, 1}, {time.Second, 2}} {
		idle, n := tc.idle, tc.n
		synctest.Test(t, func(t *testing.T) {
			s := &partSettler{parts: []uint64{0, 1}}
			var emitted atomic.Int64
			var during int64
			var idleSeen int
			p := sluice.New(context.Background())
			src := sluice.From(p, "in", func(ctx context.Context, e *sluice.Emitter[pev]) error {
				e.Send(pev{s.msg(1, 0), t0}) // partition 1 speaks once
				for i := range uint64(50) {  // partition 0: 100 ms of event time every 100 ms
					e.Send(pev{s.msg(0, i), t0.Add(time.Duration(i) * 100 * time.Millisecond)})
					e.Flush()
					time.Sleep(100 * time.Millisecond)
				}
				synctest.Wait()
				during = emitted.Load()
				idleSeen = statsOf(p, "w").Window.IdlePartitions
				return nil
			})
			spec := sluice.WindowSpec[pev, struct{}, int]{
				Windows: sluice.Tumbling(time.Second),
				Time:    func(e pev) time.Time { return e.at },
				Fold:    func(c *int, _ pev) { *c++ },
				Idle:    idle,
			}
			sluice.ForEach(p, "store", sluice.Window(p, "w", src, n, spec), 1, func(context.Context, sluice.Pane[struct{}, int]) error {
				emitted.Add(1)
				return nil
			})
			if err := p.Wait(); err != nil {
				t.Fatal(err)
			}
			if idle == 0 && (during != 0 || idleSeen != 0) {
				// Partition 1's one item, at 0 s, holds the watermark there.
				t.Fatalf("n=%d, no Idle: %d windows emitted while partition 1 was silent, idle %d; want 0, 0", n, during, idleSeen)
			}
			if idle > 0 && (during != 4 || idleSeen != 1) {
				// Event time reached 4.9 s: four windows closed.
				t.Fatalf("n=%d, Idle 1s: %d windows emitted while partition 1 was silent, idle %d; want 4, 1", n, during, idleSeen)
			}
			if emitted.Load() != 5 || s.acked.Load() != 51 {
				t.Fatalf("n=%d: %d windows, %d acked; want 5, 51", n, emitted.Load(), s.acked.Load())
			}
		})
	}
}
