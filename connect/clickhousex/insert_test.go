package clickhousex_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/clickhousex"
)

func TestInsertStoresEveryRowExactlyOnceAndThenSettlesIt(t *testing.T) {
	db := open(t)
	makeTable(t, db, "every_row")
	const n = 100_000
	var committed settled
	w := clickhousex.NewWriter(db, "every_row", eventColumns, eventRow, clickhousex.SinkWorkers(2))
	ctx := ctxT(t, 60*time.Second)
	p := sluice.New(ctx)
	clickhousex.Insert(p, "store", sluice.FromSlice(p, "events", receipted(events(n), &committed)), w)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	rows, ids, sum := distinct(t, db, "every_row")
	if rows != n || ids != n || sum != n*(n-1)/2 {
		t.Errorf("got %d rows, %d distinct ids summing to %d; want %d, %d, %d", rows, ids, sum, n, n, n*(n-1)/2)
	}
	if got, err := clickhousex.Count(ctx, db, "every_row"); err != nil || got != n {
		t.Errorf("Count: got %d, %v; want %d", got, err, n)
	}
	st := w.Stats()
	if got := committed.acked.Load(); got != n || st.Rows != n || st.Failed != 0 {
		t.Errorf("%d rows acknowledged, Stats %+v; want %d rows, no failure", got, st, n)
	}
	if st.Batches >= n/100 {
		t.Errorf("got %d batches for %d rows; want natural batches of many rows", st.Batches, n)
	}
}

func TestInsertBatchesCommitsEachBatchOnce(t *testing.T) {
	db := open(t)
	makeTable(t, db, "batches")
	const n = 10_000
	w := clickhousex.NewWriter(db, "batches", eventColumns, eventRow)
	p := sluice.New(ctxT(t, 60*time.Second))
	b := sluice.Batch(p, "collect", sluice.FromSlice(p, "events", events(n)), 500, 50*time.Millisecond)
	clickhousex.InsertBatches(p, "store", b, w)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if rows, ids, _ := distinct(t, db, "batches"); rows != n || ids != n {
		t.Errorf("got %d rows, %d distinct ids; want %d", rows, ids, n)
	}
	if st := w.Stats(); st.Batches != n/500 {
		t.Errorf("got %d batches; want %d", st.Batches, n/500)
	}
}

func TestInsertIntoMissingTableFailsPipelineAndSettlesNothing(t *testing.T) {
	db := open(t)
	var committed settled
	w := clickhousex.NewWriter(db, "no_such_table", eventColumns, eventRow)
	p := sluice.New(ctxT(t, 30*time.Second))
	clickhousex.Insert(p, "store", sluice.FromSlice(p, "events", receipted(events(10), &committed)), w)
	err := p.Wait()
	if err == nil {
		t.Fatal("got no error; want the insert's")
	}
	for _, want := range []string{"rows into no_such_table", "doesn't exist"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got error %q; want it to say %q", err, want)
		}
	}
	if got := committed.acked.Load(); got != 0 {
		t.Errorf("%d rows acknowledged; want none", got)
	}
}

func TestInsertRetriesUntilTableExists(t *testing.T) {
	db := open(t)
	ctx := ctxT(t, 60*time.Second)
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS late"); err != nil {
		t.Fatal(err)
	}
	const n = 5000
	w := clickhousex.NewWriter(db, "late", eventColumns, eventRow)
	p := sluice.New(ctx)
	clickhousex.Insert(p, "store", sluice.FromSlice(p, "events", events(n)), w,
		sluice.Retry(50, 20*time.Millisecond, 100*time.Millisecond))
	time.AfterFunc(300*time.Millisecond, func() {
		db.ExecContext(ctx, "CREATE TABLE late (id UInt64, name String) ENGINE = MergeTree ORDER BY id")
	})
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if rows, ids, _ := distinct(t, db, "late"); rows != n || ids != n {
		t.Errorf("got %d rows, %d distinct ids; want %d", rows, ids, n)
	}
	if st := w.Stats(); st.Failed == 0 {
		t.Errorf("Stats %+v: want failed tries before the table existed", st)
	}
}

func TestInsertSurvivesServerRestart(t *testing.T) {
	db := open(t)
	makeTable(t, db, "restart")
	const n = 20_000
	ctx := ctxT(t, 60*time.Second)
	var committed settled
	w := clickhousex.NewWriter(db, "restart", eventColumns, eventRow)
	restarted := make(chan error, 1)
	p := sluice.New(ctx)
	// Batches of 250 every 25 ms: the run lasts about 2 s, and the
	// server restarts after a quarter of it.
	src := sluice.From(p, "events", func(ctx context.Context, e *sluice.Emitter[event]) error {
		for i := range n {
			if i == n/4 {
				go func() {
					t0 := time.Now()
					_, err := clickhouse("restart")
					t.Logf("restart took %v", time.Since(t0))
					restarted <- err
				}()
			}
			if i%250 == 0 {
				e.Flush()
				time.Sleep(25 * time.Millisecond)
			}
			if !e.Send(event{Receipt: sluice.NewReceipt(&committed, uint64(i)), ID: uint64(i), Name: "e"}) {
				return nil
			}
		}
		return nil
	})
	clickhousex.Insert(p, "store", src, w, sluice.Retry(100, 50*time.Millisecond, 500*time.Millisecond))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	// At least once: a batch whose commit answer was lost may be stored
	// twice, but every id is there.
	rows, ids, _ := distinct(t, db, "restart")
	if ids != n || rows < n {
		t.Errorf("got %d rows, %d distinct ids; want every one of %d ids", rows, ids, n)
	}
	st := w.Stats()
	if committed.acked.Load() != n || st.Rows < n {
		t.Errorf("%d rows acknowledged, Stats %+v; want every one of %d, once", committed.acked.Load(), st, n)
	}
	t.Logf("rows %d, stats %+v", rows, st)
}

func TestInsertDeadLettersBadValuesWithoutRetrying(t *testing.T) {
	db := open(t)
	makeTable(t, db, "bad_values")
	// A string id: the driver will not put it in a UInt64 column.
	row := func(e event) []any {
		if e.ID == 7 {
			return []any{"seven", e.Name}
		}
		return eventRow(e)
	}
	var committed settled
	w := clickhousex.NewWriter(db, "bad_values", eventColumns, row)
	p := sluice.New(ctxT(t, 30*time.Second))
	var dead sluice.Stream[sluice.Failed[event]]
	// One item a chunk, so that only item 7's chunk fails.
	src := sluice.FromSlice(p, "events", receipted(events(10), &committed), sluice.Chunk(1))
	clickhousex.Insert(p, "store", src, w, sluice.Retry(5, time.Millisecond, time.Millisecond), sluice.DeadLetter(&dead))
	failed := sluice.Collect(p, "dead", dead)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	got := failed.Value()
	if len(got) != 1 || got[0].Item.ID != 7 || got[0].Attempts != 1 || !sluice.IsPermanent(got[0].Err) {
		t.Fatalf("got dead letters %+v; want item 7 alone, after 1 attempt, with a permanent error", got)
	}
	if !strings.Contains(got[0].Err.Error(), "bad_values") {
		t.Errorf("got error %q; want it to name the table", got[0].Err)
	}
	// The dead letter is not stored yet: Collect hands it to the caller.
	if rows, _, _ := distinct(t, db, "bad_values"); rows != 9 || committed.acked.Load() != 9 {
		t.Errorf("got %d rows, %d acknowledged; want 9", rows, committed.acked.Load())
	}
}
