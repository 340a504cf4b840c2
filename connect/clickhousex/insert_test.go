package clickhousex_test

import (
	"context"
	"errors"
	"slices"
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
	// Batches that waited for an insert share it.
	if st := w.Stats(); st.Batches < 1 || st.Batches > n/500 || st.Rows != n {
		t.Errorf("Stats %+v; want %d rows in at most %d inserts", st, n, n/500)
	}
}

func TestInsertBatchesGathersWaitingBatchesAndSettlesEveryReceipt(t *testing.T) {
	db := open(t)
	makeTable(t, db, "gathered")
	const n, size, maxRows = 100_000, 500, 8000
	var committed settled
	w := clickhousex.NewWriter(db, "gathered", eventColumns, eventRow, clickhousex.SinkWorkers(2))
	p := sluice.New(ctxT(t, 60*time.Second))
	b := sluice.Batch(p, "collect", sluice.FromSlice(p, "events", receipted(events(n), &committed)), size, 0)
	clickhousex.InsertBatches(p, "store", b, w, sluice.Gather(maxRows))
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	rows, ids, sum := distinct(t, db, "gathered")
	if rows != n || ids != n || sum != n*(n-1)/2 {
		t.Errorf("got %d rows, %d distinct ids summing to %d; want %d, %d, %d", rows, ids, sum, n, n, n*(n-1)/2)
	}
	st := w.Stats()
	if got := committed.acked.Load(); got != n || committed.failed.Load() != 0 || st.Rows != n {
		t.Errorf("%d receipts acknowledged, %d failed, Stats %+v; want all %d acknowledged", got, committed.failed.Load(), st, n)
	}
	// The source floods the store: waiting batches go in together, and
	// no insert holds more than maxRows rows.
	if st.Batches >= n/size/2 || st.Batches < n/maxRows {
		t.Errorf("got %d inserts for %d batches of %d; want between %d and %d", st.Batches, n/size, size, n/maxRows, n/size/2)
	}
	t.Logf("%d batches of %d in %d inserts", n/size, size, st.Batches)
}

func TestWriteAloneInsertsAtOnce(t *testing.T) {
	db := open(t)
	makeTable(t, db, "alone")
	w := clickhousex.NewWriter(db, "alone", eventColumns, eventRow)
	ctx := ctxT(t, 20*time.Second)
	for i := range 3 {
		if err := w.Write(ctx, events(10)); err != nil {
			t.Fatal(err)
		}
		if got, err := clickhousex.Count(ctx, db, "alone"); err != nil || got != int64(10*(i+1)) {
			t.Fatalf("after Write %d: %d rows, %v; want %d", i+1, got, err, 10*(i+1))
		}
	}
	if st := w.Stats(); st.Batches != 3 || st.Rows != 30 {
		t.Errorf("Stats %+v; want 3 inserts of 10 rows", st)
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

// The connections the pool kept die with the server (here: restarted
// between two writes). The driver finds one dead as its transaction
// begins, before any row is sent, and the write takes another: the next
// Write succeeds at its first call, with no stage Retry.
func TestWriteAfterAServerRestartTakesAFreshConnection(t *testing.T) {
	db := open(t)
	makeTable(t, db, "stale")
	w := clickhousex.NewWriter(db, "stale", eventColumns, eventRow)
	ctx := ctxT(t, 60*time.Second)
	if err := w.Write(ctx, events(10)); err != nil {
		t.Fatal(err)
	}
	if idle := db.Stats().Idle; idle < 1 {
		t.Fatalf("%d idle connections after a write; want the write's kept", idle)
	}
	if _, err := clickhouse("restart"); err != nil {
		t.Fatal(err)
	}
	// Wait for the server on a pool of its own, so that db's connections
	// stay as the restart left them.
	other := open(t)
	if err := other.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, events(10)); err != nil {
		t.Fatalf("the write after the restart: %v; want it on a fresh connection", err)
	}
	if got, err := clickhousex.Count(ctx, other, "stale"); err != nil || got != 20 {
		t.Fatalf("%d rows, %v; want 20", got, err)
	}
	if st := w.Stats(); st.Batches != 2 || st.Rows != 20 || st.Failed != 0 {
		t.Errorf("Stats %+v; want 2 inserts of 10 rows, none failed", st)
	}
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
	// One item a chunk: chunks that wait go in one insert, which fails;
	// then each is inserted again alone, so that only item 7's fails.
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

func TestWriteLeavesOutOnlyTheRowsWithValuesTheDriverRejects(t *testing.T) {
	db := open(t)
	makeTable(t, db, "left_out")
	w := clickhousex.NewWriter(db, "left_out", eventColumns, badIDs(3, 8))
	err := w.Write(ctxT(t, 20*time.Second), events(10))
	var ie sluice.ItemErrors
	if !errors.As(err, &ie) || len(ie) != 10 {
		t.Fatalf("got %v; want ItemErrors for the 10 rows", err)
	}
	for i, e := range ie {
		if (e != nil) != (i == 3 || i == 8) || (e != nil && (!sluice.IsPermanent(e) || !strings.Contains(e.Error(), "left_out"))) {
			t.Errorf("row %d: error %v; want a permanent error naming the table for rows 3 and 8 only", i, e)
		}
	}
	if rows, ids, _ := distinct(t, db, "left_out"); rows != 8 || ids != 8 {
		t.Fatalf("stored %d rows (%d ids); want the 8 good ones", rows, ids)
	}
}

func TestInsertBatchesLeavesOutABatchWithABadValueAndDeadLettersIt(t *testing.T) {
	db := open(t)
	makeTable(t, db, "bad_batch")
	var committed settled
	w := clickhousex.NewWriter(db, "bad_batch", eventColumns, badIDs(42))
	p := sluice.New(ctxT(t, 30*time.Second))
	var dead sluice.Stream[sluice.Failed[[]event]]
	b := sluice.Batch(p, "collect", sluice.FromSlice(p, "events", receipted(events(100), &committed), sluice.Chunk(100)), 10, 0)
	clickhousex.InsertBatches(p, "store", b, w, sluice.Retry(3, time.Millisecond, time.Millisecond), sluice.DeadLetter(&dead))
	failed := sluice.Collect(p, "dead", dead)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	got := failed.Value()
	if len(got) != 1 || got[0].Item[0].ID != 40 || len(got[0].Item) != 10 || got[0].Attempts != 1 {
		t.Fatalf("dead letters %+v; want the batch 40..49 alone, after 1 attempt", got)
	}
	if rows, _, _ := distinct(t, db, "bad_batch"); rows != 90 || committed.acked.Load() != 90 {
		t.Fatalf("stored %d rows, %d acknowledged; want the 90 rows of the other batches", rows, committed.acked.Load())
	}
}

// badIDs is eventRow, but the rows of the given ids get a string id, which
// the driver will not put in a UInt64 column.
func badIDs(ids ...uint64) func(event) []any {
	return func(e event) []any {
		if slices.Contains(ids, e.ID) {
			return []any{"bad", e.Name}
		}
		return eventRow(e)
	}
}
