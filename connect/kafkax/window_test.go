package kafkax_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/kafkax"
	"github.com/twmb/franz-go/pkg/kgo"
)

type idSum struct{ n, sum int }

// A window that holds more records than MaxInFlight: 5-second windows of
// 5,000 records each, read with MaxInFlight(1000). The records a window
// holds are parked (no longer counted in flight), so the reader goes on
// fetching, the watermark advances and every window closes; every
// record is committed once its window is stored. A record at 25 s on
// every partition moves the watermark past the last window; the run is
// then drained, which leaves those four in their open window,
// uncommitted, for the next run.
func TestWindowHoldsMoreThanMaxInFlight(t *testing.T) {
	const parts = 4
	in := newTopic(t, parts)
	const n, bound = 20000, 1000
	produceN(t, in, n)
	ticks, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range int32(parts) {
		v := []byte(strconv.Itoa(25000 + int(i)))
		if err := ticks.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Topic: in, Partition: i, Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ticks.Close()
	src := newSource(t, "window", []string{in}, kafkax.MaxInFlight(bound))
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	id := func(m kafkax.Msg) int { v, _ := strconv.Atoi(string(m.Value())); return v }
	p := sluice.New(ctxT(t, 2*time.Minute))
	spec := sluice.WindowSpec[kafkax.Msg, struct{}, idSum]{
		Windows:    sluice.Tumbling(5 * time.Second),
		Time:       func(m kafkax.Msg) time.Time { return t0.Add(time.Duration(id(m)) * time.Millisecond) },
		Fold:       func(a *idSum, m kafkax.Msg) { a.n++; a.sum += id(m) },
		OutOfOrder: 10 * time.Millisecond,
	}
	var mu sync.Mutex
	got := map[time.Time]idSum{}
	var held int64
	win := sluice.Window(p, "bars", kafkax.Read(p, "read", src), 2, spec)
	sluice.ForEach(p, "store", win, 1, func(_ context.Context, pn sluice.Pane[struct{}, idSum]) error {
		mu.Lock()
		defer mu.Unlock()
		got[pn.Start] = pn.Acc
		held = max(held, statsWindow(p).Held)
		if len(got) == 4 {
			p.Drain()
		}
		return nil
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d windows, want 4: %v", len(got), got)
	}
	for k := range 4 {
		lo := k * 5000
		want := idSum{5000, 5000*lo + 5000*4999/2}
		if a := got[t0.Add(time.Duration(lo)*time.Millisecond)]; a != want {
			t.Fatalf("window %d = %+v, want %+v", k, a, want)
		}
	}
	if held <= bound {
		t.Fatalf("the windows held at most %d records; the test needs more than MaxInFlight %d", held, bound)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if l := lag(t, "window", in); l != parts {
		t.Fatalf("lag %d after the four windows were stored, want %d: the records of the open window only", l, parts)
	}
	t.Logf("windows held up to %d records with MaxInFlight %d; source %+v", held, bound, src.Stats())
}

func statsWindow(p *sluice.Pipeline) sluice.WindowStats {
	for _, st := range p.Stats().Stages {
		if st.Window != nil {
			return *st.Window
		}
	}
	return sluice.WindowStats{}
}

// StopWhenCaughtUp ends the input once every partition is read to its end
// and what is not committed is held by a window; the windows are then
// emitted, stored, and every record committed.
func TestWindowWithStopWhenCaughtUp(t *testing.T) {
	in := newTopic(t, 4)
	const n = 8000
	produceN(t, in, n)
	src := newSource(t, "window-stop", []string{in}, kafkax.StopWhenCaughtUp(), kafkax.MaxInFlight(1000))
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	id := func(m kafkax.Msg) int { v, _ := strconv.Atoi(string(m.Value())); return v }
	p := sluice.New(ctxT(t, 2*time.Minute))
	spec := sluice.WindowSpec[kafkax.Msg, struct{}, idSum]{
		Windows: sluice.Tumbling(5 * time.Second),
		Time:    func(m kafkax.Msg) time.Time { return t0.Add(time.Duration(id(m)) * time.Millisecond) },
		Fold:    func(a *idSum, m kafkax.Msg) { a.n++; a.sum += id(m) },
	}
	total := 0
	sluice.ForEach(p, "store", sluice.Window(p, "bars", kafkax.Read(p, "read", src), 2, spec), 1,
		func(_ context.Context, pn sluice.Pane[struct{}, idSum]) error {
			total += pn.Acc.n
			return nil
		})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if total != n {
		t.Fatalf("windows folded %d records, want %d", total, n)
	}
	if l := lag(t, "window-stop", in); l != 0 {
		t.Fatalf("lag %d, want 0", l)
	}
}
