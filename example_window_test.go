package sluice_test

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
)

// A trade with its own timestamp: the event time.
type exTrade struct {
	Sym   string
	Price float64
	Qty   float64
	At    time.Time
}

// A one-second bar: open, high, low, close, volume and the sums for VWAP.
type bar struct {
	Open, High, Low, Close, Vol, PxVol float64
}

func (b *bar) add(t exTrade) {
	if b.Vol == 0 {
		b.Open, b.High, b.Low = t.Price, t.Price, t.Price
	}
	b.High, b.Low, b.Close = max(b.High, t.Price), min(b.Low, t.Price), t.Price
	b.Vol += t.Qty
	b.PxVol += t.Price * t.Qty
}

// Per-symbol one-second bars by event time: trades up to 100 ms out of
// order still land in their second; the bar is emitted once the
// watermark (latest time seen − 100 ms) passes the second's end.
func ExampleWindow() {
	at := func(ms int) time.Time {
		return time.Date(2026, 11, 29, 9, 30, 0, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond)
	}
	trades := []exTrade{
		{"ACME", 10.0, 100, at(10)},
		{"INIT", 50.0, 10, at(20)},
		{"ACME", 10.4, 50, at(700)},
		{"ACME", 10.2, 50, at(1050)},
		{"ACME", 10.1, 100, at(950)}, // 100 ms late: still in the first second
		{"INIT", 51.0, 10, at(1500)},
	}
	p := sluice.New(context.Background())
	bars := sluice.Window(p, "bars", sluice.FromSlice(p, "trades", trades), 2, sluice.WindowSpec[exTrade, string, bar]{
		Windows:    sluice.Tumbling(time.Second),
		Key:        func(t exTrade) string { return t.Sym },
		Time:       func(t exTrade) time.Time { return t.At },
		Fold:       func(b *bar, t exTrade) { b.add(t) },
		OutOfOrder: 100 * time.Millisecond,
	})
	got := sluice.Collect(p, "store", bars)
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	var lines []string
	for _, pn := range got.Value() {
		b := pn.Acc
		lines = append(lines, fmt.Sprintf("%s %s O %.1f H %.1f L %.1f C %.1f V %.0f VWAP %.3f",
			pn.Start.Format("15:04:05"), pn.Key, b.Open, b.High, b.Low, b.Close, b.Vol, b.PxVol/b.Vol))
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// 09:30:00 ACME O 10.0 H 10.4 L 10.0 C 10.1 V 250 VWAP 10.120
	// 09:30:00 INIT O 50.0 H 50.0 L 50.0 C 50.0 V 10 VWAP 50.000
	// 09:30:01 ACME O 10.2 H 10.2 L 10.2 C 10.2 V 50 VWAP 10.200
	// 09:30:01 INIT O 51.0 H 51.0 L 51.0 C 51.0 V 10 VWAP 51.000
}

// A late item within the lateness updates its window, which is emitted
// again with the next Revision; one beyond it goes to the late stream.
func ExampleWindowSpec_lateness() {
	at := func(ms int) time.Time {
		return time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond)
	}
	type ev struct {
		N  int
		At time.Time
	}
	evs := []ev{{1, at(100)}, {2, at(1200)}, {3, at(900)}, {4, at(2500)}, {5, at(800)}}
	p := sluice.New(context.Background())
	var late sluice.Stream[sluice.Late[ev]]
	counts := sluice.Window(p, "count", sluice.FromSlice(p, "events", evs), 1, sluice.WindowSpec[ev, struct{}, int]{
		Windows:  sluice.Tumbling(time.Second),
		Time:     func(e ev) time.Time { return e.At },
		Fold:     func(n *int, _ ev) { *n++ },
		Lateness: time.Second,
		Late:     &late,
	})
	sluice.ForEach(p, "late", late, 1, func(_ context.Context, l sluice.Late[ev]) error {
		fmt.Printf("late: item %d at %s, watermark %s\n", l.Item.N, l.Time.Format("05.000"), l.Watermark.Format("05.000"))
		return nil
	})
	panes := sluice.Collect(p, "store", counts)
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	for _, pn := range panes.Value() {
		fmt.Printf("[%s, %s) revision %d: %d items\n", pn.Start.Format("05"), pn.End.Format("05"), pn.Revision, pn.Acc)
	}
	// Output:
	// late: item 5 at 00.800, watermark 02.500
	// [00, 01) revision 0: 1 items
	// [00, 01) revision 1: 2 items
	// [01, 02) revision 0: 1 items
	// [02, 03) revision 0: 1 items
}

// Sessions per user: a session ends after 30 minutes without a click.
func ExampleSessions() {
	at := func(min int) time.Time {
		return time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC).Add(time.Duration(min) * time.Minute)
	}
	type click struct {
		User string
		At   time.Time
	}
	clicks := []click{{"ann", at(0)}, {"bob", at(5)}, {"ann", at(20)}, {"ann", at(45)}, {"bob", at(50)}, {"ann", at(120)}}
	p := sluice.New(context.Background())
	sessions := sluice.Window(p, "sessions", sluice.FromSlice(p, "clicks", clicks), 2, sluice.WindowSpec[click, string, int]{
		Windows: sluice.Sessions(30 * time.Minute),
		Key:     func(c click) string { return c.User },
		Time:    func(c click) time.Time { return c.At },
		Fold:    func(n *int, _ click) { *n++ },
		Merge:   func(into, from *int) { *into += *from },
	})
	got := sluice.Collect(p, "store", sessions)
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	var lines []string
	for _, pn := range got.Value() {
		lines = append(lines, fmt.Sprintf("%s %s–%s %d clicks", pn.Key, pn.Start.Format("15:04"), pn.End.Format("15:04"), pn.Acc))
	}
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// ann 08:00–09:15 3 clicks
	// ann 10:00–10:30 1 clicks
	// bob 08:05–08:35 1 clicks
	// bob 08:50–09:20 1 clicks
}

// Dedup within a TTL: the first item of a key passes, the repeats within
// ten minutes of the last sighting are dropped (and acknowledged); a key
// unseen for ten minutes is evicted, so memory follows the keys of the
// last ten minutes.
func ExampleKeyed() {
	type order struct {
		ID  string
		Qty int
	}
	orders := []order{{"a", 1}, {"b", 2}, {"a", 1}, {"c", 3}, {"b", 2}}
	p := sluice.New(context.Background())
	unique := sluice.Keyed(p, "dedup", sluice.FromSlice(p, "orders", orders), 4, sluice.KeyFuncs[order, string, bool, order]{
		Key: func(o order) string { return o.ID },
		Item: func(_ context.Context, _ string, seen *bool, o order, emit func(order) bool) error {
			if !*seen {
				*seen = true
				emit(o)
			}
			return nil
		},
		TTL: 10 * time.Minute,
	})
	got := sluice.Collect(p, "store", unique)
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	ids := []string{}
	for _, o := range got.Value() {
		ids = append(ids, o.ID)
	}
	slices.Sort(ids)
	fmt.Println(ids)
	// Output: [a b c]
}

// A control item goes to every worker, which sees all its keys: here a
// snapshot of every running total.
func ExampleKeyFuncs_control() {
	type ev struct {
		Key  string
		N    int
		Snap bool // a control item: report every total
	}
	evs := []ev{{"x", 1, false}, {"y", 2, false}, {"x", 3, false}, {"", 0, true}, {"y", 4, false}}
	p := sluice.New(context.Background())
	out := sluice.Keyed(p, "totals", sluice.FromSlice(p, "events", evs), 3, sluice.KeyFuncs[ev, string, int, string]{
		Key:       func(e ev) string { return e.Key },
		Item:      func(_ context.Context, _ string, sum *int, e ev, _ func(string) bool) error { *sum += e.N; return nil },
		IsControl: func(e ev) bool { return e.Snap },
		Control: func(_ context.Context, _ ev, keys iter.Seq2[string, *int], emit func(string) bool) error {
			for k, sum := range keys {
				emit(fmt.Sprintf("snapshot %s=%d", k, *sum))
			}
			return nil
		},
		End: func(_ context.Context, k string, sum *int, why sluice.KeyEnd, emit func(string) bool) error {
			emit(fmt.Sprintf("%v %s=%d", why, k, *sum))
			return nil
		},
	})
	got := sluice.Collect(p, "store", out)
	if err := p.Wait(); err != nil {
		fmt.Println(err)
		return
	}
	lines := got.Value()
	slices.Sort(lines)
	fmt.Println(strings.Join(lines, "\n"))
	// Output:
	// flushed x=4
	// flushed y=6
	// snapshot x=4
	// snapshot y=2
}
