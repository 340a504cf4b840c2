package sluice_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice"
)

// A partition that joins behind the others, after a window fed by several
// partitions (no key) was emitted, never makes a second revision 0 with
// only its part. While the window is kept (Lateness), its items update
// it: the next Revision, with every item, emitted once the watermark —
// gone back to the newcomer's — passes the window's end again. Once the
// window was dropped (its lateness over by the stage's watermark), its
// items are late and counted, though its own partition's watermark would
// call them on time.
func TestWindowAPartitionJoiningBehindUpdatesOrIsLate(t *testing.T) {
	for _, c := range []struct {
		upto    time.Duration // partition 0 runs alone up to here
		lateEnd time.Duration // the newcomer's items before this are late
	}{{3 * time.Second, 0}, {5 * time.Second, 2 * time.Second}} {
		for n := 1; n <= 3; n++ {
			synctest.Test(t, func(t *testing.T) {
				s := &movingSettler{}
				s.list(0)
				var joined sluice.WindowStats
				got, ws := partWindow(t, s, n, sluice.WindowSpec[mev, uint64, int]{
					OutOfOrder: 100 * time.Millisecond,
					Lateness:   2 * time.Second,
				}, func(p *sluice.Pipeline, e *sluice.Emitter[mev]) {
					s0 := sendRange(e, s, 0, 0, 0, c.upto, 100*time.Millisecond)
					synctest.Wait()
					s.list(0, 1)
					time.Sleep(time.Second)
					s1 := sendRange(e, s, 1, 0, 500*time.Millisecond, 1500*time.Millisecond, 100*time.Millisecond)
					synctest.Wait()
					joined = *statsOf(p, "w").Window
					sendRange(e, s, 1, s1, 1500*time.Millisecond, c.upto+time.Second, 100*time.Millisecond)
					sendRange(e, s, 0, s0, c.upto, c.upto+time.Second, 100*time.Millisecond)
				})
				label := fmt.Sprintf("upto %v, n=%d", c.upto, n)
				want := func(start time.Duration) int { // items of both partitions in [start, start+1s)
					k := 10
					if start >= c.lateEnd.Truncate(time.Second) && start+time.Second > 500*time.Millisecond {
						k += 10
						if start < 500*time.Millisecond {
							k -= 5
						}
					}
					if start+time.Second <= c.lateEnd {
						k = 10
					}
					return k
				}
				last := map[time.Duration]sluice.Pane[uint64, int]{}
				for _, pn := range got {
					start := pn.Start.Sub(t0)
					prev, seen := last[start]
					if seen && pn.Revision != prev.Revision+1 || !seen && pn.Revision != 0 {
						t.Fatalf("%s: window at %v: revision %d after %v; want 0, 1, 2…: panes %v", label, start, pn.Revision, prev.Revision, got)
					}
					last[start] = pn
				}
				for start, pn := range last {
					if pn.Items != want(start) {
						t.Fatalf("%s: window at %v ends with %d items, want %d: panes %v", label, start, pn.Items, want(start), got)
					}
				}
				if late := int64(c.lateEnd-500*time.Millisecond) / int64(100*time.Millisecond); c.lateEnd == 0 && ws.LateDropped != 0 || c.lateEnd > 0 && ws.LateDropped != late {
					t.Fatalf("%s: %d items late, want %d", label, ws.LateDropped, max(late, 0))
				}
				if c.lateEnd == 0 && joined.Updated != 1 {
					t.Fatalf("%s: %d updates emitted once the newcomer's watermark passed 1 s, want 1 (window [0, 1 s))", label, joined.Updated)
				}
				if ws.Held != 0 || ws.Open != 0 {
					t.Fatalf("%s: stats %+v after the end", label, ws)
				}
			})
		}
	}
}
