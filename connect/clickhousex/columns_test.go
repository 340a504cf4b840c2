package clickhousex_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/connect/clickhousex"
)

// typed is a row of every type a column writer writes.
type typed struct {
	sluice.Receipt
	ID    uint64
	Delta int64
	Ratio float64
	Name  string
}

func typedColumns() []clickhousex.Column[typed] {
	return []clickhousex.Column[typed]{
		clickhousex.UInt64Column("id", func(r *typed) uint64 { return r.ID }),
		clickhousex.Int64Column("delta", func(r *typed) int64 { return r.Delta }),
		clickhousex.Float64Column("ratio", func(r *typed) float64 { return r.Ratio }),
		clickhousex.StringColumn("name", func(r *typed) string { return r.Name }),
	}
}

func makeTypedTable(t *testing.T, name string) *sql.DB {
	t.Helper()
	db := open(t)
	ctx := ctxT(t, 20*time.Second)
	if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+name); err != nil {
		t.Fatal(err)
	}
	ddl := "CREATE TABLE " + name + " (id UInt64, delta Int64, ratio Float64, name String) ENGINE = MergeTree ORDER BY id"
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	return db
}

// The column writer stores every row with its values, in the blocks the
// driver would send (here one every 1000 rows), and settles each row once
// its insert committed.
func TestColumnWriterStoresEveryValueAndSettlesEachRow(t *testing.T) {
	db := makeTypedTable(t, "typed_rows")
	defer clickhousex.SetColumnBlockRows(1000)()
	const n = 25_000
	var committed settled
	rows := make([]typed, n)
	for i := range rows {
		rows[i] = typed{Receipt: sluice.NewReceipt(&committed, uint64(i)), ID: uint64(i), Delta: int64(i) - n/2,
			Ratio: float64(i) / 4, Name: strings.Repeat("x", i%7)}
	}
	w := clickhousex.NewColumnWriter(db, "typed_rows", typedColumns())
	ctx := ctxT(t, 60*time.Second)
	p := sluice.New(ctx)
	clickhousex.Insert(p, "store", sluice.FromSlice(p, "rows", rows), w)
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	var count, ids, idSum uint64
	var deltaSum int64
	var ratioSum float64
	var nameLen uint64
	err := db.QueryRowContext(ctx, "SELECT count(), uniqExact(id), sum(id), sum(delta), sum(ratio), sum(length(name)) FROM typed_rows").
		Scan(&count, &ids, &idSum, &deltaSum, &ratioSum, &nameLen)
	if err != nil {
		t.Fatal(err)
	}
	var wantDelta int64
	var wantRatio float64
	var wantLen uint64
	for _, r := range rows {
		wantDelta += r.Delta
		wantRatio += r.Ratio
		wantLen += uint64(len(r.Name))
	}
	if count != n || ids != n || idSum != n*(n-1)/2 || deltaSum != wantDelta || ratioSum != wantRatio || nameLen != wantLen {
		t.Errorf("got count %d, %d ids summing to %d, delta sum %d, ratio sum %v, name length %d; want %d, %d, %d, %d, %v, %d",
			count, ids, idSum, deltaSum, ratioSum, nameLen, n, n, n*(n-1)/2, wantDelta, wantRatio, wantLen)
	}
	var name string
	var delta int64
	if err := db.QueryRowContext(ctx, "SELECT delta, name FROM typed_rows WHERE id = 12345").Scan(&delta, &name); err != nil {
		t.Fatal(err)
	}
	if want := rows[12345]; delta != want.Delta || name != want.Name {
		t.Errorf("row 12345: got delta %d, name %q; want %d, %q", delta, name, want.Delta, want.Name)
	}
	if st := w.Stats(); committed.acked.Load() != n || st.Rows != n || st.Failed != 0 {
		t.Errorf("%d rows acknowledged, Stats %+v; want %d rows, no failure", committed.acked.Load(), st, n)
	}
}

// A writer whose column types do not match the table's fails the insert
// before sending a row, with a permanent error that says which column
// differs. (A column the table lacks is the server's error, at prepare: it
// may be added, so that one is not permanent.)
func TestColumnWriterRefusesColumnsOfAnotherType(t *testing.T) {
	db := makeTypedTable(t, "typed_mismatch")
	cols := typedColumns()
	cols[0] = clickhousex.Int64Column("id", func(r *typed) int64 { return int64(r.ID) })
	cols[2] = clickhousex.StringColumn("ratio", func(r *typed) string { return r.Name })
	w := clickhousex.NewColumnWriter(db, "typed_mismatch", cols)
	err := w.Write(ctxT(t, 20*time.Second), []typed{{ID: 1}, {ID: 2}})
	if err == nil || !sluice.IsPermanent(err) {
		t.Fatalf("got %v; want a permanent error", err)
	}
	for _, want := range []string{"typed_mismatch", "column 1 is id UInt64 in the table, id Int64 in the writer",
		"column 3 is ratio Float64 in the table, ratio String in the writer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q; want it to say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "column 2") || strings.Contains(err.Error(), "column 4") {
		t.Errorf("got %q; want only the columns that differ", err)
	}
	if rows, _, _ := distinct(t, db, "typed_mismatch"); rows != 0 {
		t.Errorf("got %d rows; want none", rows)
	}
	if st := w.Stats(); st.Failed != 1 || st.Rows != 0 {
		t.Errorf("Stats %+v; want one failed insert, no row", st)
	}
}

func TestNewColumnWriterPanicsOnAColumnMadeByHand(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "column 0 has no name") {
			t.Errorf("got panic %v; want one naming column 0", r)
		}
	}()
	clickhousex.NewColumnWriter(open(t), "t", []clickhousex.Column[typed]{{}})
}

// Each constructor's bad arguments panic with a message that names the
// constructor and what is wrong (no server needed: nothing is contacted).
func TestWriterConstructorsNameThemselvesAndTheBadArgument(t *testing.T) {
	db := new(sql.DB) // never used: each case panics first
	row := func(typed) []any { return nil }
	cols := typedColumns()
	for _, c := range []struct {
		name string
		make func()
		want string
	}{
		{"NewWriter nil db", func() { clickhousex.NewWriter(nil, "t", []string{"a"}, row) }, "clickhousex: NewWriter: nil *sql.DB"},
		{"NewWriter nil row", func() { clickhousex.NewWriter(db, "t", []string{"a"}, (func(typed) []any)(nil)) }, "clickhousex: NewWriter: nil row function"},
		{"NewWriter no table", func() { clickhousex.NewWriter(db, " ", []string{"a"}, row) }, "clickhousex: NewWriter: empty table name"},
		{"NewWriter no columns", func() { clickhousex.NewWriter(db, "t", nil, row) }, "clickhousex: NewWriter t: no columns"},
		{"NewColumnWriter nil db", func() { clickhousex.NewColumnWriter(nil, "t", cols) }, "clickhousex: NewColumnWriter: nil *sql.DB"},
		{"NewColumnWriter no table", func() { clickhousex.NewColumnWriter(db, "", cols) }, "clickhousex: NewColumnWriter: empty table name"},
		{"NewColumnWriter no columns", func() { clickhousex.NewColumnWriter[typed](db, "t", nil) }, "clickhousex: NewColumnWriter t: no columns"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != c.want {
					t.Errorf("got panic %v; want %q", r, c.want)
				}
			}()
			c.make()
		})
	}
}

func TestAColumnWithANilValueFunctionPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `column "id": nil value function`) {
			t.Errorf("got panic %v; want one naming the column", r)
		}
	}()
	clickhousex.Int64Column[typed]("id", nil)
}

// An insert whose rows fill its last block exactly (nothing left for the
// commit to send but the end of the data) stores every row.
func TestColumnWriterInsertOfWholeBlocks(t *testing.T) {
	db := makeTypedTable(t, "typed_blocks")
	defer clickhousex.SetColumnBlockRows(1000)()
	rows := make([]typed, 3000)
	for i := range rows {
		rows[i] = typed{ID: uint64(i), Name: "r"}
	}
	if err := clickhousex.NewColumnWriter(db, "typed_blocks", typedColumns()).Write(ctxT(t, 20*time.Second), rows); err != nil {
		t.Fatal(err)
	}
	if n, ids, sum := distinct(t, db, "typed_blocks"); n != 3000 || ids != 3000 || sum != 3000*2999/2 {
		t.Errorf("got %d rows, %d ids summing to %d; want 3000, 3000, %d", n, ids, sum, 3000*2999/2)
	}
}
