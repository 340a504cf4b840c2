package natsx_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/natsx"
)

// A window that would hold more messages than the server lets be
// unacknowledged (MaxAckPending) cannot close: no more input comes. The
// stage fails the run naming the setting instead of stalling.
func TestWindowHoldingMaxInFlightFailsNamingIt(t *testing.T) {
	js := serverWith(t, "IN")
	const n, limit = 2000, 100
	publishN(t, js, "in.x", n)
	ctx := ctxT(t, time.Minute)
	src := newSource(t, ctx, js, "IN", "win", natsx.MaxInFlight(limit), natsx.FetchBatch(20))
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	p := sluice.New(ctx)
	spec := sluice.WindowSpec[natsx.Msg, struct{}, int]{
		Windows: sluice.Tumbling(time.Minute), // 1 ms per message: all of them in one window
		Time: func(m natsx.Msg) time.Time {
			i, _ := strconv.Atoi(string(m.Data()))
			return t0.Add(time.Duration(i) * time.Millisecond)
		},
		Fold: func(a *int, _ natsx.Msg) { *a++ },
	}
	win := sluice.Window(p, "count", natsx.Read(p, "read", src), 1, spec)
	sluice.ForEach(p, "store", win, 1, func(context.Context, sluice.Pane[struct{}, int]) error { return nil })
	err := p.Wait()
	if err == nil || !strings.Contains(err.Error(), "natsx.MaxInFlight") || !strings.Contains(err.Error(), `"count"`) {
		t.Fatalf("got %v, want the window stage's error naming natsx.MaxInFlight", err)
	}
	t.Log(err)
}

// Below the bound the windows close by the watermark, and each message is
// acknowledged once its window is stored; a drain leaves the last window,
// open, unacknowledged.
func TestWindowSettlesMessagesOnceStored(t *testing.T) {
	js := serverWith(t, "IN")
	const n = 2000
	publishN(t, js, "in.x", n)
	ctx := ctxT(t, time.Minute)
	src := newSource(t, ctx, js, "IN", "win", natsx.MaxInFlight(500), natsx.FetchBatch(20))
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	p := sluice.New(ctx)
	spec := sluice.WindowSpec[natsx.Msg, struct{}, int]{
		Windows: sluice.Tumbling(100 * time.Millisecond), // 100 messages per window
		Time: func(m natsx.Msg) time.Time {
			i, _ := strconv.Atoi(string(m.Data()))
			return t0.Add(time.Duration(i) * time.Millisecond)
		},
		Fold:       func(a *int, _ natsx.Msg) { *a++ },
		OutOfOrder: 50 * time.Millisecond,
	}
	total := 0
	win := sluice.Window(p, "count", natsx.Read(p, "read", src), 2, spec)
	sluice.ForEach(p, "store", win, 1, func(_ context.Context, pn sluice.Pane[struct{}, int]) error {
		total += pn.Acc
		if total == n-100 {
			p.Drain()
		}
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if st := src.Stats(); st.Acked != n-100 || total != n-100 {
		t.Fatalf("acked %d, folded %d; want %d", st.Acked, total, n-100)
	}
}
