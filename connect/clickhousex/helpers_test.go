package clickhousex_test

import (
	"context"
	"database/sql"
	"github.com/sluicehq/sluice"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connect/clickhousex"
)

// event is the tests' row: an id and a name.
// event is a row; it carries the receipt of the message it came from
// (the zero Receipt for none), which the insert stages settle once the
// row is committed.
type event struct {
	sluice.Receipt
	ID   uint64
	Name string
}

// settled counts the receipts settled: acknowledged, and failed.
type settled struct{ acked, failed atomic.Int64 }

func (s *settled) Settle(_ uint64, cause error) {
	if cause == nil {
		s.acked.Add(1)
	} else {
		s.failed.Add(1)
	}
}

// receipted gives every event a receipt that reports to s.
func receipted(es []event, s *settled) []event {
	for i := range es {
		es[i].Receipt = sluice.NewReceipt(s, uint64(i))
	}
	return es
}

func eventRow(e event) []any { return []any{e.ID, e.Name} }

var eventColumns = []string{"id", "name"}

func events(n int) []event {
	es := make([]event, n)
	for i := range es {
		es[i] = event{ID: uint64(i), Name: "e"}
	}
	return es
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// open connects to the tests' server; the pool closes when the test ends.
func open(t *testing.T) *sql.DB {
	t.Helper()
	addr := needServer(t)
	db, err := clickhousex.Open(ctxT(t, 20*time.Second), addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// makeTable (re)creates an events table named name.
func makeTable(t *testing.T, db *sql.DB, name string) {
	t.Helper()
	ctx := ctxT(t, 20*time.Second)
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+name); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+name+" (id UInt64, name String) ENGINE = MergeTree ORDER BY id"); err != nil {
		t.Fatal(err)
	}
}

// distinct returns count(), uniqExact(id) and sum(id) of table.
func distinct(t *testing.T, db *sql.DB, table string) (rows, ids, sum uint64) {
	t.Helper()
	err := db.QueryRowContext(ctxT(t, 20*time.Second), "SELECT count(), uniqExact(id), sum(id) FROM "+table).Scan(&rows, &ids, &sum)
	if err != nil {
		t.Fatal(err)
	}
	return rows, ids, sum
}
