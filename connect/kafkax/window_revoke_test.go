package kafkax_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/kafkax"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A window keyed by partition, open on member A, when the group moves its
// partition to member B: A discards it (its records were not settled, so
// B reads them again from the committed offset) and B emits it, whole.
// Each partition's window is stored once, by the member that owns the
// partition, with every record of it.
func TestWindowOfARevokedPartitionIsNotEmittedByItsOldOwner(t *testing.T) {
	const parts, n, group = 2, 2000, "window-revoke"
	in := newTopic(t, parts)
	produceToPartitions(t, in, n, parts)
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	id := func(m kafkax.Msg) int { v, _ := strconv.Atoi(string(m.Value())); return v }

	type stored struct {
		member string
		part   int32
		items  int
	}
	var mu sync.Mutex
	var panes []stored
	ctx, cancel := context.WithCancel(ctxT(t, 2*time.Minute))
	defer cancel()
	member := func(name string) (*kafkax.Source, *sluice.Pipeline, chan error) {
		src := newSource(t, group, []string{in})
		p := sluice.New(ctx)
		spec := sluice.WindowSpec[kafkax.Msg, int32, int]{
			Windows:    sluice.Tumbling(10 * time.Second),
			Key:        func(m kafkax.Msg) int32 { return m.Partition() },
			Time:       func(m kafkax.Msg) time.Time { return t0.Add(time.Duration(id(m)) * time.Millisecond) },
			Fold:       func(c *int, _ kafkax.Msg) { *c++ },
			OutOfOrder: 10 * time.Millisecond,
		}
		win := sluice.Window(p, "bars", kafkax.Read(p, "read", src), 2, spec)
		sluice.ForEach(p, "store", win, 1, func(_ context.Context, pn sluice.Pane[int32, int]) error {
			mu.Lock()
			panes = append(panes, stored{name, pn.Key, pn.Items})
			mu.Unlock()
			return nil
		})
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		return src, p, done
	}
	a, pa, aDone := member("A")
	eventually(t, time.Minute, "A holds every record in its windows", func() bool { return statsWindow(pa).Held == n })
	b, pb, bDone := member("B")
	eventually(t, time.Minute, "the group gives B a partition", func() bool {
		return len(a.Partitions()) == 1 && len(b.Partitions()) == 1
	})
	// A record at 30 s on each partition moves each member's watermark
	// past the windows.
	ticks, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	for i := range int32(parts) {
		if err := ticks.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Topic: in, Partition: i, Value: []byte("30000")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ticks.Close()
	eventually(t, time.Minute, "each member is done with the windows it held, and stored what it emitted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		wa, wb := statsWindow(pa), statsWindow(pb)
		by := map[string]int64{}
		for _, s := range panes {
			by[s.member]++
		}
		return wa.Emitted+wa.Revoked >= 2 && wb.Emitted >= 1 && by["A"] == wa.Emitted && by["B"] == wb.Emitted
	})
	cancel()
	for _, done := range []chan error{aDone, bDone} {
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("panes %+v; A %+v, B %+v", panes, statsWindow(pa), statsWindow(pb))
	byPart := map[int32][]stored{}
	for _, s := range panes {
		byPart[s.part] = append(byPart[s.part], s)
	}
	for part := range int32(parts) {
		if ps := byPart[part]; len(ps) != 1 || ps[0].items != n/parts {
			t.Fatalf("partition %d: panes %+v; want one, of %d records, by its owner", part, ps, n/parts)
		}
	}
	if w := statsWindow(pa); w.Revoked != 1 {
		t.Fatalf("A discarded %d windows, want 1 (the moved partition's)", w.Revoked)
	}
}

// Member A reads one partition live, its watermark at 10 s; member B
// holds the other's windows unstored, then leaves. A takes B's partition
// over and reads its backlog from the committed offset — event times far
// behind A's watermark — judged against that partition's own watermark:
// none is late, and A emits each of its windows once, whole.
func TestWindowATakenOverBacklogIsNotLate(t *testing.T) {
	const parts, n, group = 2, 2000, "window-takeover"
	in := newTopic(t, parts)
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	id := func(m kafkax.Msg) int { v, _ := strconv.Atoi(string(m.Value())); return v }
	type stored struct {
		part         int32
		start, items int
	}
	var mu sync.Mutex
	var panes []stored
	ctx, cancel := context.WithCancel(ctxT(t, 2*time.Minute))
	defer cancel()
	member := func(ctx context.Context, block bool) (*kafkax.Source, *sluice.Pipeline, chan error) {
		src := newSource(t, group, []string{in})
		p := sluice.New(ctx)
		spec := sluice.WindowSpec[kafkax.Msg, int32, int]{
			Windows:    sluice.Tumbling(time.Second),
			Key:        func(m kafkax.Msg) int32 { return m.Partition() },
			Time:       func(m kafkax.Msg) time.Time { return t0.Add(time.Duration(id(m)) * 5 * time.Millisecond) },
			Fold:       func(c *int, _ kafkax.Msg) { *c++ },
			OutOfOrder: 10 * time.Millisecond,
		}
		win := sluice.Window(p, "bars", kafkax.Read(p, "read", src), 2, spec)
		sluice.ForEach(p, "store", win, 1, func(ctx context.Context, pn sluice.Pane[int32, int]) error {
			if block { // B stores nothing: its records stay uncommitted
				<-ctx.Done()
				return ctx.Err()
			}
			mu.Lock()
			panes = append(panes, stored{pn.Key, int(pn.Start.Sub(t0) / time.Second), pn.Items})
			mu.Unlock()
			return nil
		})
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		return src, p, done
	}
	a, pa, aDone := member(ctx, false)
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	b, pb, bDone := member(bctx, true)
	eventually(t, time.Minute, "each member owns a partition", func() bool {
		return len(a.Partitions()) == 1 && len(b.Partitions()) == 1
	})
	produceToPartitions(t, in, n, parts)
	eventually(t, time.Minute, "A emitted its partition's first 9 windows and B holds its records", func() bool {
		return statsWindow(pa).Emitted >= 9 && statsWindow(pb).Emitted >= 1
	})
	bcancel()
	if err := <-bDone; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Logf("B's close: %v", err)
	}
	eventually(t, time.Minute, "A stored the taken-over partition's windows", func() bool {
		mu.Lock()
		defer mu.Unlock()
		w := statsWindow(pa)
		return len(panes) >= 18 || w.Late+w.LateDropped > 0
	})
	cancel()
	if err := <-aDone; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	w := statsWindow(pa)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("A: %+v; panes %+v", w, panes)
	if w.Late+w.LateDropped != 0 {
		t.Fatalf("A took %d events of the taken-over backlog as late", w.Late+w.LateDropped)
	}
	seen := map[[2]int]bool{}
	for _, s := range panes {
		k := [2]int{int(s.part), s.start}
		if seen[k] || s.items != 100 {
			t.Fatalf("pane %+v (again: %v); want each window once, 100 records", s, seen[k])
		}
		seen[k] = true
	}
	if len(seen) != 18 {
		t.Fatalf("%d windows stored, want 9 of each partition", len(seen))
	}
}
